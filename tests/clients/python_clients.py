# SPDX-License-Identifier: Apache-2.0
"""
python_clients.py -- Debian's redis-py (python3-redis), sync and asyncio,
and requests (python3-requests) against a running frond serve, for
tests/integration/test_clients.py. Run by /usr/bin/python3, the Python
those packages are for.

    python3 python_clients.py CLIENT RESP_PORT HTTP_PORT [PASSWORD]

CLIENT: redis-py, redis-py-asyncio, requests. Each checks IDs (strings
the server decodes back to themselves, increasing, unique), INCR an int,
errors as exceptions with their code, and pipelining (or, for requests, a
chunked body from a generator). Prints one JSON object with the IDs it
got, or why it failed (exit status 1).
"""
import asyncio
import json
import sys

client, resp_port, http_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
password = sys.argv[4] if len(sys.argv) > 4 else None


def check(cond, msg):
    if not cond:
        raise AssertionError("%s: %s" % (client, msg))


def ids(reply, n, what):
    check(isinstance(reply, list) and len(reply) == n, "%s: %r" % (what, reply))
    for i in reply:
        check(isinstance(i, bytes) and i.isdigit(), "%s: %r" % (what, i))
    vals = [int(i) for i in reply]
    check(vals == sorted(set(vals)), "%s: %r" % (what, reply))
    return [i.decode() for i in reply]


def decoded(reply):
    return {reply[i].decode(): reply[i + 1] for i in range(0, len(reply), 2)}


def check_errors(err, code, what):
    check(str(err).startswith(code + " "), "%s: %s" % (what, err))


def sync_redis():
    import redis
    r = redis.Redis(host="127.0.0.1", port=resp_port, password=password,
                    socket_timeout=10, client_name="python-clients")
    out = {"client": "redis-py %s" % redis.__version__, "snowflake": [],
           "segment": []}
    sf = ids(r.execute_command("ID.SNOWFLAKE", 5), 5, "ID.SNOWFLAKE 5")
    for i in sf:
        f = decoded(r.execute_command("ID.DECODE", i))
        check(f["id"] == i.encode(), "ID.DECODE %s: %r" % (i, f))
    out["snowflake"] += sf
    a, b = r.incr("order"), r.incr("order")
    check(isinstance(a, int) and b > a, "INCR %r %r" % (a, b))
    out["segment"] += [a, b]
    try:
        r.incr("nope")
        check(False, "INCR nope gave a reply")
    except redis.ResponseError as e:
        check_errors(e, "TAG_NOT_FOUND", "INCR nope")
    p = r.pipeline(transaction=False)
    for i in range(500):
        if i == 250:
            p.incr("nope")
        elif i % 5 == 0:
            p.execute_command("ID.SNOWFLAKE", 2)
        else:
            p.incr("order")
    got = p.execute(raise_on_error=False)
    last = b
    for i, x in enumerate(got):
        if i == 250:
            check(isinstance(x, redis.ResponseError), "pipelined error %r" % x)
            check_errors(x, "TAG_NOT_FOUND", "pipelined INCR nope")
        elif i % 5 == 0:
            out["snowflake"] += ids(x, 2, "pipelined ID.SNOWFLAKE")
        else:
            check(isinstance(x, int) and x > last, "pipelined INCR %r" % x)
            last = x
            out["segment"].append(x)
    # The default pipeline is a transaction (MULTI ... EXEC): nothing runs
    # before EXEC, then everything in order, an error as its element.
    p = r.pipeline()
    for _ in range(100):
        p.incr("order")
    p.execute_command("ID.NEXT", "order", 3)
    p.incr("nope")
    p.incrby("order", 50)
    got = p.execute(raise_on_error=False)
    check(len(got) == 103, "transaction: %d replies" % len(got))
    for x in got[:100]:
        check(isinstance(x, int) and x > last, "transaction INCR %r" % x)
        last = x
        out["segment"].append(x)
    nx = ids(got[100], 3, "transaction ID.NEXT")
    check(int(nx[0]) > last, "ID.NEXT %r after %d" % (nx, last))
    out["segment"] += [int(i) for i in nx]
    check(isinstance(got[101], redis.ResponseError), "INCR nope: %r"
          % got[101])
    check_errors(got[101], "TAG_NOT_FOUND", "INCR nope in a transaction")
    # INCRBY n: n consecutive IDs, the last answered.
    check(isinstance(got[102], int) and got[102] >= int(nx[-1]) + 50,
          "INCRBY 50: %r after %s" % (got[102], nx[-1]))
    out["segment"] += list(range(got[102] - 49, got[102] + 1))
    # A transaction refused while queueing burns nothing: the next INCR
    # follows the one before it.
    before = r.incr("order")
    p = r.pipeline()
    p.incr("order")
    p.execute_command("NOSUCH", "order")
    p.incr("order")
    try:
        p.execute()
        check(False, "a transaction with an unknown command ran")
    except redis.ResponseError as e:
        check("unknown command" in str(e) or "EXECABORT" in str(e),
              "refused transaction: %s" % e)
    after = r.incr("order")
    check(after == before + 1, "after a refused transaction INCR gave %d, "
          "not %d: IDs were burnt" % (after, before + 1))
    out["segment"] += [before, after]
    out["unknown"] = 1  # NOSUCH, on purpose
    r.close()
    return out


async def async_redis():
    import redis
    import redis.asyncio as aredis
    r = aredis.Redis(host="127.0.0.1", port=resp_port, password=password,
                     socket_timeout=10)
    out = {"client": "redis-py %s asyncio" % redis.__version__,
           "snowflake": [], "segment": []}
    sf = ids(await r.execute_command("ID.SNOWFLAKE", 5), 5, "ID.SNOWFLAKE")
    out["snowflake"] += sf
    f = decoded(await r.execute_command("ID.DECODE", sf[0]))
    check(f["id"] == sf[0].encode(), "ID.DECODE %r" % f)
    # Many coroutines on a pool at once: every ID distinct.
    got = await asyncio.gather(*(r.incr("order") for _ in range(300)))
    check(len(set(got)) == 300 and all(isinstance(x, int) for x in got),
          "concurrent INCR: %d distinct" % len(set(got)))
    out["segment"] += got
    try:
        await r.incr("nope")
        check(False, "INCR nope gave a reply")
    except redis.ResponseError as e:
        check_errors(e, "TAG_NOT_FOUND", "INCR nope")
    async with r.pipeline(transaction=False) as p:
        for _ in range(200):
            p.incr("order")
        got = await p.execute()
    check(got == sorted(set(got)) and len(got) == 200, "async pipeline")
    out["segment"] += got
    # The default pipeline: a transaction.
    async with r.pipeline() as p:
        for _ in range(50):
            p.incr("order")
        got = await p.execute()
    check(got == sorted(set(got)) and len(got) == 50 and
          got[0] > out["segment"][-201], "async transaction %r" % got[:3])
    out["segment"] += got
    await r.close()
    return out


def with_requests():
    import requests
    base = "http://127.0.0.1:%d" % http_port
    auth = {"Authorization": "Bearer " + password} if password else {}
    out = {"client": "requests %s" % requests.__version__, "snowflake": [],
           "segment": []}
    s = requests.Session()
    s.headers.update(auth)  # with a token, every request needs it
    r = s.get(base + "/v1/snowflake", params={"count": 5}, timeout=10)
    check(r.status_code == 200, "GET /v1/snowflake: %d" % r.status_code)
    sf = r.json()["ids"]
    check([int(i) for i in sf] == sorted(set(int(i) for i in sf)) and
          all(isinstance(i, str) for i in sf), "IDs %r" % sf)
    for i in sf:
        check(s.get(base + "/v1/decode/" + i, timeout=10).json()["id"] == i,
              "decode %s" % i)
    out["snowflake"] += sf
    # A generator body is sent chunked.
    tag = "requests-%d" % http_port

    def body():
        yield b'{"tag": "%s", ' % tag.encode()
        yield b'"step": 20,'
        yield b' "description": "chunked"}'
    r = s.post(base + "/v1/tags", data=body(), timeout=10,
               headers=dict(auth, **{"Content-Type": "application/json"}))
    check(r.request.headers.get("Transfer-Encoding") == "chunked",
          "requests did not send it chunked: %r" % r.request.headers)
    check(r.status_code == 201 and r.json()["description"] == "chunked",
          "POST /v1/tags chunked: %d %s" % (r.status_code, r.text))
    r = s.get(base + "/v1/segment/" + tag, params={"count": 3}, timeout=10)
    got = r.json()["ids"]
    check(got == ["1", "2", "3"], "the new tag's IDs: %r" % got)
    r = s.get(base + "/v1/segment/nope", timeout=10)
    check(r.status_code == 404 and
          r.json()["error"]["code"] == "TAG_NOT_FOUND", r.text)
    r = s.delete(base + "/v1/tags/" + tag, headers=auth, timeout=10)
    check(r.status_code == 204 and r.content == b"" and
          "Content-Length" not in r.headers, "DELETE: %r" % r.headers)
    return out


try:
    if client == "redis-py":
        result = sync_redis()
    elif client == "redis-py-asyncio":
        result = asyncio.run(async_redis())
    elif client == "requests":
        result = with_requests()
    else:
        raise AssertionError("unknown client %s" % client)
    print(json.dumps(result))
except Exception as e:  # every failure is reported the same way
    print("%s: %s: %s" % (client, type(e).__name__, e))
    sys.exit(1)
