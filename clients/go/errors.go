// SPDX-License-Identifier: Apache-2.0

package frond

import "fmt"

// Codes the client itself gives, besides the server's stable codes
// (docs/reference/errors.md), which an Error carries as the server sent
// them: TAG_NOT_FOUND, COUNT_INVALID, SEGMENT_UNAVAILABLE, ...
const (
	// CodeUnavailable: no server answered (connection refused or reset)
	// on any attempt.
	CodeUnavailable = "UNAVAILABLE"
	// CodeTimeout: the last attempt timed out, or the caller's context
	// ended.
	CodeTimeout = "TIMEOUT"
	// CodeBadResponse: an answer that does not parse, or a range below
	// one the same server leased before.
	CodeBadResponse = "BAD_RESPONSE"
	// CodeStoreMismatch: no server gave a range of the store the client
	// pinned (the first one a range answer named), or several servers
	// are listed and one does not name its store.
	CodeStoreMismatch = "STORE_MISMATCH"
	// CodeClosed: the client was closed.
	CodeClosed = "CLOSED"
	// CodeInvalid: an argument the client refuses before any call.
	CodeInvalid = "INVAL"
)

// Error is every error the client returns: Frond's stable code, a
// message, and the HTTP status of the answer (0 when there was none).
type Error struct {
	Code    string
	Message string
	Status  int
	Server  string // the base URL of the server that answered, if any
	err     error  // the cause: a transport error, the caller's context
}

func (e *Error) Error() string {
	if e.Server != "" {
		return fmt.Sprintf("frond: %s: %s (%s)", e.Code, e.Message, e.Server)
	}
	return fmt.Sprintf("frond: %s: %s", e.Code, e.Message)
}

// Unwrap gives the cause, so that errors.Is(err, context.Canceled) holds
// for a call whose context was cancelled.
func (e *Error) Unwrap() error { return e.err }

// Is makes errors.Is(err, &frond.Error{Code: "TAG_NOT_FOUND"}) compare
// codes only.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CodeOf returns the code of a *Error, or "" for nil or another error.
func CodeOf(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Code
	}
	return ""
}

func newError(code, format string, args ...interface{}) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
