# SPDX-License-Identifier: Apache-2.0
"""The client's one exception, apart so that every module can raise it."""


class FrondError(Exception):
    """A call that did not give IDs. `code` is Frond's stable code
    (TAG_NOT_FOUND, SEGMENT_UNAVAILABLE, COUNT_INVALID, ...), or one of
    the client's own: UNAVAILABLE (no server answered), TIMEOUT (the last
    attempt timed out), BAD_RESPONSE (an answer that does not parse, or a
    range below one the same server leased before), STORE_MISMATCH (no
    server gave a range of the store the client pinned, or several
    servers are listed and one names no store), CLOSED (the client was
    closed).
    `status` is the HTTP status, 0 when there was none."""

    def __init__(self, code, message, status=0):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
        self.status = status
