// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

/**
 * Every failure of the client: Frond's stable code (the server's, such as
 * {@code TAG_NOT_FOUND}, or the client's own: {@code UNAVAILABLE},
 * {@code TIMEOUT}, {@code BAD_RESPONSE}, {@code CLOSED}, {@code INVAL}),
 * a message, and the HTTP status of the answer (0 when there was none).
 */
public final class FrondException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public static final String UNAVAILABLE = "UNAVAILABLE";
    public static final String TIMEOUT = "TIMEOUT";
    public static final String BAD_RESPONSE = "BAD_RESPONSE";
    public static final String CLOSED = "CLOSED";
    public static final String INVAL = "INVAL";
    /** No server gave a range of the store the client pinned (the first one
     *  a range answer named), or several servers are listed and one does
     *  not name its store. */
    public static final String STORE_MISMATCH = "STORE_MISMATCH";

    private final String code;
    private final int status;
    private final String server;

    public FrondException(String code, String message, int status, String server,
                          Throwable cause) {
        super(message, cause);
        this.code = code;
        this.status = status;
        this.server = server;
    }

    public FrondException(String code, String message) {
        this(code, message, 0, null, null);
    }

    private FrondException(String code, String message, Void shared) {
        super(message, null, false, false);
        this.code = code;
        this.status = 0;
        this.server = null;
    }

    /** One made in advance, to be thrown to many callers when no other can
     *  be made (memory is short): it has no stack trace, and gathers no
     *  suppressed exceptions. */
    static FrondException shared(String code, String message) {
        return new FrondException(code, message, (Void) null);
    }

    /** Frond's stable code. */
    public String code() { return code; }

    /** The HTTP status of the answer, 0 when there was none. */
    public int status() { return status; }

    /** The base URL of the server that answered or failed, or null. */
    public String server() { return server; }

    @Override
    public String toString() {
        return "frond: " + code + ": " + getMessage()
            + (server != null ? " (" + server + ")" : "");
    }
}
