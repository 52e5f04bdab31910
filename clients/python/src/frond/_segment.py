# SPDX-License-Identifier: Apache-2.0
"""
A segment handle: a tag's IDs handed out in the process from ranges the
server leases (GET /v1/segment/{tag}/range), as Leaf's double buffer does
in the server and tinyid's client does in the caller.

- Two buffers: the current range, and the next one, fetched by a
  background thread once what remains of the current range falls below
  `preload` (a fraction of its size). next() takes the next ID of the
  current range under a lock held for a few attribute reads; when the
  range is used up it switches to the next one, and waits only when that
  one has not arrived (up to every attempt of the client's retries).
- The range size adapts to the rate, as the server's dynamic step: it
  starts at `min_range`, doubles when a range lasts less than `target`
  seconds, halves when it lasts more than twice that, within
  [min_range, max_range]. At a steady rate that makes one server call per
  `target` seconds at most, whatever the rate. It changes once per range
  used, never on a failed attempt. A server that refuses the size
  (COUNT_INVALID: above its max_range) teaches the client its bound (the
  one its message names, else half the size), and the load is retried at
  once within it.
- A range older than `validity` seconds (0: never) is dropped, the IDs
  left in it skipped, never reused: a process does not hand out numbers
  hours after they were leased.
- Order is kept per server: a range must start at or above the end of
  every range the same server leased before; one that does not is
  dropped and reported as BAD_RESPONSE, never used. Servers of one store
  answer from their own buffers, so ranges of different servers are
  unique but not in order, and are not compared: IDs of one handle are
  unique always, and increasing while one server serves; after a
  failover they may be lower than those the other server gave. That the
  servers share one store is checked by the client (STORE_MISMATCH).
"""
import math
import re
import threading
import time

from frond._errors import FrondError


def _set_all(futs):
    """On their event loop: the woken calls' futures set."""
    for fut in futs:
        if not fut.done():
            fut.set_result(None)


class _Wait:
    """What a call waiting for a range saw between its looks (_step):
    the load it waits for, its deadline, and the time left to wait."""
    __slots__ = ("seq", "deadline", "left")

    def __init__(self):
        self.seq = self.deadline = self.left = None


class Segment:
    """The IDs of one tag, handed out from locally leased ranges.

    Get it with Client.tag(name): one per tag per client. Thread-safe;
    next() never calls the server while the buffers hold IDs."""

    def __init__(self, client, name, *, min_range=1000, max_range=1000000,
                 preload=0.2, target=10.0, validity=60.0):
        if not (isinstance(min_range, int) and isinstance(max_range, int)
                and 1 <= min_range <= max_range):
            raise FrondError("INVAL", "1 <= min_range <= max_range, not %r "
                             "and %r" % (min_range, max_range))
        if not 0 < preload < 1 or target <= 0 or validity < 0:
            raise FrondError("INVAL", "0 < preload < 1, target > 0 and "
                             "validity >= 0")
        self.name = name
        self._client = client
        self._min, self._max = min_range, max_range
        self._preload = float(preload)
        self._target = float(target)
        self._validity = float(validity)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # The current range: [_pos, _end), from _start, since _since.
        self._pos = self._end = self._start = 0
        self._since = 0.0
        self._preload_at = -1
        self._size = min_range     # of the next range to ask for
        self._sized = 0            # the _gen _size was last adapted to
        self._cap = None           # the server's bound, once it refused
        self._next = None          # (start, end, fetched) or None
        self._hi = {}              # server index: end of its last range
        self._loading = False
        self._load_seq = 0         # loads started, and finished
        self._done_seq = 0
        self._error = None         # of the last load that finished
        self._gen = 0              # the current range's, for its timer
        self._timer = None
        self._closed = False
        self._ranges = 0
        self._issued = 0           # of ranges no longer current
        self._dropped = 0
        self._watchers = {}        # the asyncio calls waiting: fut: loop

    # ------------------------------------------------------------ next

    def next(self):
        """The tag's next ID, an int. Raises FrondError when no range
        could be had (the client's code: UNAVAILABLE, TIMEOUT,
        TAG_NOT_FOUND, SEGMENT_UNAVAILABLE, ...)."""
        with self._lock:
            p = self._pos
            if p < self._end:
                self._pos = p + 1
                if p == self._preload_at:
                    self._start_load()
                return p
            return self._slow(True)

    def try_next(self):
        """The next ID if the buffers hold one, else None (a load is
        started): next() without waiting, for event loops."""
        with self._lock:
            p = self._pos
            if p < self._end:
                self._pos = p + 1
                if p == self._preload_at:
                    self._start_load()
                return p
            return self._slow(False)

    def _slow(self, wait):
        """The current range is used up (lock held): switch to the next,
        or wait for it."""
        w = _Wait()
        while True:
            v = self._step(wait, w)
            if v is not w:
                return v
            self._cond.wait(w.left)

    def _step(self, wait, w):
        """One look of a call at the bounds (lock held): an ID, None (no
        ID and wait false: a load is started), or w itself, its time
        left set, when the call is to wait for the load under way (and
        look again when woken or at its time). Raises the call's error.
        w keeps what the call saw between looks."""
        c = self._client
        while True:
            if self._closed:
                raise FrondError("CLOSED", "the client is closed")
            if self._pos < self._end:  # another thread switched
                p = self._pos
                self._pos = p + 1
                if p == self._preload_at:
                    self._start_load()
                return p
            n = self._next
            if n is not None:
                self._next = None
                if self._validity and \
                        time.monotonic() - n[2] > self._validity:
                    self._dropped += n[1] - n[0]
                    continue
                self._install(n)
                continue
            if w.seq is not None and self._done_seq >= w.seq and \
                    not self._loading:
                if self._error is not None:
                    raise self._error  # the load this call waited for
                w.seq = None  # its range went to other threads: once more
            if not wait:
                self._start_load()
                return None
            if not self._loading:
                self._start_load()
            w.seq = self._load_seq
            if not self._loading:
                continue  # it could not start: its error, above
            if w.deadline is None:
                # Every attempt and backoff of one range call, and some.
                w.deadline = time.monotonic() + (c.timeout + c.backoff_max) \
                    * (c.retries + 1) + 1.0
            w.left = w.deadline - time.monotonic()
            if w.left <= 0:
                raise FrondError("TIMEOUT", "no range of %s within the "
                                 "client's retries" % self.name)
            return w

    def _watch(self, loop, fut):
        """Set future fut of event loop loop when this call's turn comes
        to look again (lock held): for the asyncio handle, whose waits
        hold no thread. Calls are woken in the order they began to wait
        (_wake)."""
        self._watchers[fut] = loop

    def _unwatch(self, fut):
        """Forget fut if it still waits (lock held)."""
        self._watchers.pop(fut, None)

    def _wake(self, n=None):
        """Wake the waiting calls (lock held): every thread, and of the
        coroutines the first n to wait (every one when n is None: an
        error, or the handle closed). A range of k IDs wakes k + 1: more
        would only look and wait again, each once per load, which a
        burst of calls on small ranges pays for many times over. One
        wake-up is scheduled per event loop, whatever its calls."""
        self._cond.notify_all()
        self._wake_coroutines(n)

    def _wake_coroutines(self, n=None):
        """The coroutines' part of _wake (lock held). Calls of a closed
        loop never look again: they are forgotten, and not counted."""
        loops = {}
        seen = []
        for fut, loop in self._watchers.items():
            if n == 0:
                break
            seen.append(fut)
            if not loop.is_closed():
                loops.setdefault(loop, []).append(fut)
                if n is not None:
                    n -= 1
        for fut in seen:
            del self._watchers[fut]
        for loop, futs in loops.items():
            try:
                loop.call_soon_threadsafe(_set_all, futs)
            except RuntimeError:
                pass  # closed meanwhile: nobody waits there

    def _install(self, n):
        """Make range n current (lock held); start its validity timer."""
        start, end, fetched = n
        self._issued += self._pos - self._start
        self._dropped += self._end - self._pos
        self._start = self._pos = start
        self._end = end
        self._since = time.monotonic()
        self._preload_at = end - max(1, math.ceil((end - start)
                                                  * self._preload))
        if self._preload_at < start:
            self._preload_at = start
        self._gen += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._validity:
            left = self._validity - (time.monotonic() - fetched)
            self._timer = threading.Timer(max(0.0, left), self._expire,
                                          (self._gen,))
            self._timer.daemon = True
            self._timer.start()

    def _expire(self, gen):
        with self._lock:
            if gen == self._gen and self._pos < self._end:
                self._dropped += self._end - self._pos
                self._pos = self._end

    # ------------------------------------------------------------ loads

    def _next_size(self):
        """The size of the range to ask for (lock held): from how long the
        current one lasts at the rate it is used."""
        size = self._size
        used = self._pos - self._start
        # Once per range used: a load retried after a failure, with the
        # same range current, asks for the same size.
        if self._sized != self._gen and self._end > self._start and \
                used > 0:
            self._sized = self._gen
            lasted = (time.monotonic() - self._since) \
                * (self._end - self._start) / used
            if lasted < self._target:
                size *= 2
            elif lasted > 2 * self._target:
                size //= 2
        size = min(self._max, max(self._min, size))
        if self._cap is not None:
            size = min(size, self._cap)
        self._size = size
        return size

    def _lease(self, size):
        """A range of at most size IDs: (start, end, server). A server
        that refuses the size as above its bound (COUNT_INVALID) is asked
        again within it: the bound its message names, else half."""
        for _ in range(64):
            try:
                return self._client._lease_range(self.name, size)
            except FrondError as e:
                if e.code != "COUNT_INVALID" or e.status != 400 or size <= 1:
                    raise
                m = re.search(r"\[1, ?(\d+)\]", e.message)
                bound = int(m.group(1)) if m else 0
                size = bound if 1 <= bound < size else size // 2
                with self._lock:
                    self._cap = size
                    self._size = min(self._size, size)
        raise FrondError("COUNT_INVALID", "%s: no range size the server "
                         "takes" % self.name)

    def _start_load(self):
        """Fetch the next range in the background (lock held), unless
        one is on its way or waiting."""
        if self._loading or self._next is not None or self._closed:
            return
        self._loading = True
        self._load_seq += 1
        try:
            t = threading.Thread(target=self._load,
                                 args=(self._next_size(), self._load_seq),
                                 name="frond-range-" + self.name,
                                 daemon=True)
            t.start()
        except BaseException as e:
            # No thread, no load (threads used up, the interpreter
            # stopping). A load left marked as on its way would stop every
            # later one: it ends here, the calls waiting for it fail with
            # UNAVAILABLE, and the next call at the bound tries again.
            self._end_load(self._load_seq, None, FrondError(
                "UNAVAILABLE", "%s: a range load could not start: %s: %s"
                % (self.name, type(e).__name__, e)))
            if not isinstance(e, Exception):
                raise

    def _load(self, size, seq):
        err = rng = escaped = None
        try:
            rng = self._lease(size)
        except FrondError as e:
            err = e
        except Exception as e:  # a bug must not leave waiters hanging
            err = FrondError("BAD_RESPONSE", "%s: %s" % (type(e).__name__,
                                                         e))
        except BaseException as e:  # nor a thread stopped under it
            err = FrondError("UNAVAILABLE", "%s: the range load stopped: "
                             "%s: %s" % (self.name, type(e).__name__, e))
            escaped = e
        with self._lock:
            self._end_load(seq, rng, err)
        if escaped is not None:
            raise escaped

    def _end_load(self, seq, rng, err):
        """Load seq ended with range rng or error err (lock held): the
        next range installed or the error kept, the waiting calls woken.
        A load ended already, with another started since (a start that
        raised after its thread ran), only has its range counted as
        dropped."""
        if seq != self._load_seq:
            if rng is not None:
                self._dropped += rng[1] - rng[0]
            return
        self._loading = False
        self._done_seq = seq
        self._error = err
        if rng is not None:
            start, end, i = rng
            hi = self._hi.get(i)
            if self._closed:
                self._dropped += end - start
            elif hi is not None and start < hi:
                self._dropped += end - start
                self._error = FrondError(
                    "BAD_RESPONSE", "range [%d, %d) of %s from %s is "
                    "below %d, the end of a range it leased before: "
                    "dropped" % (start, end, self.name,
                                 self._client._name(i), hi))
            else:
                self._hi[i] = end
                self._ranges += 1
                self._next = (start, end, time.monotonic())
                self._wake(end - start + 1)
                return
        self._wake()

    # ------------------------------------------------------------ rest

    def _after_fork(self):
        """In a child of fork() (_client.py): both buffers dropped, so
        that the child never hands out an ID its parent may; no load or
        timer is running here."""
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._watchers = {}  # of the parent's loops: none runs here
        self._issued += self._pos - self._start
        self._dropped += self._end - self._pos
        self._start = self._pos = self._end
        if self._next is not None:
            self._dropped += self._next[1] - self._next[0]
            self._next = None
        self._loading = False
        self._done_seq = self._load_seq
        self._error = None
        self._timer = None

    def stats(self):
        """ranges leased, IDs issued, IDs dropped (expired, closed,
        refused), the size the next range will have, IDs left in the
        buffers."""
        with self._lock:
            left = self._end - self._pos
            if self._next is not None:
                left += self._next[1] - self._next[0]
            return {"ranges": self._ranges,
                    "issued": self._issued + self._pos - self._start,
                    "dropped": self._dropped, "range_size": self._size,
                    "buffered": left}

    def close(self):
        """Drop both buffers: their IDs are skipped, never reused."""
        with self._lock:
            self._closed = True
            self._issued += self._pos - self._start
            self._dropped += self._end - self._pos
            self._start = self._pos = self._end
            if self._next is not None:
                self._dropped += self._next[1] - self._next[0]
                self._next = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._wake()
