// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

/**
 * Counts of a client or of one tag's handle: HTTP requests sent (every
 * attempt), attempts that failed (connection, timeout, 503), moves to the
 * next server, ranges leased, IDs in them, and leased IDs skipped
 * (expired, closed, refused).
 */
public record Stats(long calls, long failures, long failovers, long ranges,
                    long leased, long dropped) {}
