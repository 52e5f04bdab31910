// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.time.Duration;

/**
 * How a segment tag's handle leases ranges: the preload point (a fraction
 * of a range), the range size's bounds and the time a range should last,
 * and the validity after which a buffered range is dropped
 * ({@link Duration#ZERO}: never).
 */
public record TagOptions(double preload, long minRange, long maxRange,
                         Duration target, Duration validity) {
    public static final TagOptions DEFAULTS = new TagOptions(
        0.2, 1_000, 1_000_000, Duration.ofSeconds(10), Duration.ofSeconds(60));

    public TagOptions {
        if (!(preload > 0 && preload < 1))
            throw new FrondException(FrondException.INVAL,
                "preload " + preload + " is not in (0, 1)");
        if (minRange < 1 || maxRange < minRange)
            throw new FrondException(FrondException.INVAL, "range sizes ["
                + minRange + ", " + maxRange + "] are not 1 <= min <= max");
        if (target == null || target.isNegative())
            throw new FrondException(FrondException.INVAL, "target " + target
                + " is not a duration of 0 or more");
        if (validity == null || validity.isNegative())
            throw new FrondException(FrondException.INVAL, "validity " + validity
                + " is not a duration of 0 or more");
    }

    public TagOptions withPreload(double v) {
        return new TagOptions(v, minRange, maxRange, target, validity);
    }

    public TagOptions withRange(long min, long max) {
        return new TagOptions(preload, min, max, target, validity);
    }

    public TagOptions withTarget(Duration v) {
        return new TagOptions(preload, minRange, maxRange, v, validity);
    }

    public TagOptions withValidity(Duration v) {
        return new TagOptions(preload, minRange, maxRange, target, v);
    }
}
