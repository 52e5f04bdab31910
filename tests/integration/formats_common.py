# SPDX-License-Identifier: Apache-2.0
"""
formats_common.py -- what the tests of formats served by `frond serve`
share: the keys and specs, a run's environment without FROND_*
variables, a key file, and an error answer's code.
"""
import os
import re

KEY1 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
KEY2 = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"

ORDERS = "order:digits=19,check=damm,key=1,prefix=%Y%m%d-,tz=Asia/Shanghai"
ORDERS2 = "order:digits=19,check=damm,key=2,prefix=%Y%m%d-,tz=Asia/Shanghai"
DAILY = "seq:tag=orders,period=day,digits=6,tz=Asia/Tokyo"
FORMATS = {"orders": ORDERS, "orders2": ORDERS2, "daily": DAILY,
           "short": "base62", "b32": "base32",
           "keyed": "seq:tag=orders,digits=8,key=1,check=damm,period=month"}

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                   r"[0-9a-f]{12}$")
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                   r"[0-9a-f]{12}$")
ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
OID = re.compile(r"^[0-9a-f]{24}$")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    env.update(extra)
    return env


def key_file(d, text, mode=0o600):
    path = os.path.join(d, "order.keys")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def error_of(body):
    return body["error"]["code"]
