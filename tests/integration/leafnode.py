# SPDX-License-Identifier: Apache-2.0
"""
leafnode.py -- a Leaf segment node's database side, statement for
statement, for tests that run Leaf beside Frond on one MySQL table.

Leaf (leaf-core, IDAllocMapper and IDAllocDaoImpl) allocates in one
MyBatis session with autocommit off:

    UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = #{tag}
        (later loads: SET max_id = max_id + #{step}, its dynamic step)
    SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = #{tag}
    commit

and serves [max_id - step, max_id) with the step it asked for. It lists
tags with SELECT biz_tag FROM leaf_alloc. The SQL strings below are
Leaf's, with PyMySQL's %s for MyBatis' #{...}.

As a program: leafnode.py HOST PORT DB TAG COUNT [PAUSE_MS] prints one
segment per line, "lo hi", doubling its step on every load as Leaf's
dynamic step does under load (capped at 1,000,000), pausing PAUSE_MS
between loads.
"""
import sys

UPDATE_MAX_ID = "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = %s"
UPDATE_BY_STEP = ("UPDATE leaf_alloc SET max_id = max_id + %s "
                  "WHERE biz_tag = %s")
GET_ALLOC = "SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = %s"
GET_ALL_TAGS = "SELECT biz_tag FROM leaf_alloc"
MAX_STEP = 1000000

# Leaf's own DDL (scripts/leaf_alloc.sql in Leaf's repository), verbatim.
DDL = """DROP TABLE IF EXISTS `leaf_alloc`;

CREATE TABLE `leaf_alloc` (
  `biz_tag` varchar(128)  NOT NULL DEFAULT '',
  `max_id` bigint(20) NOT NULL DEFAULT '1',
  `step` int(11) NOT NULL,
  `description` varchar(256)  DEFAULT NULL,
  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (`biz_tag`)
) ENGINE=InnoDB;"""

# The row Leaf's README inserts.
README_ROW = ("insert into leaf_alloc(biz_tag, max_id, step, description) "
              "values('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode "
              "Get Id')")


class LeafNode:
    """One Leaf node's DAO over a PyMySQL connection (autocommit off)."""

    def __init__(self, conn):
        self.conn = conn
        self.steps = {}  # tag -> the step of its last load

    def alloc(self, tag, step=None):
        """Leaf's updateMaxId(AndGetLeafAlloc) or, with a step,
        updateMaxIdByCustomStep: returns the segment [lo, hi)."""
        cur = self.conn.cursor()
        try:
            if step is None:
                cur.execute(UPDATE_MAX_ID, (tag,))
            else:
                cur.execute(UPDATE_BY_STEP, (step, tag))
            cur.execute(GET_ALLOC, (tag,))
            row = cur.fetchone()
            self.conn.commit()
        except Exception:
            self.conn.rollback()
            raise
        finally:
            cur.close()
        if row is None:
            raise LookupError("tag %s not found" % tag)
        max_id, row_step = int(row[1]), int(row[2])
        used = row_step if step is None else step
        return (max_id - used, max_id)

    def next_segment(self, tag):
        """A load as Leaf's SegmentIDGenImpl makes it: the row's step
        first, then a doubled step while segments go fast."""
        prev = self.steps.get(tag)
        if prev is None:
            lo, hi = self.alloc(tag)
            self.steps[tag] = hi - lo
        else:
            nxt = min(prev * 2, MAX_STEP)
            lo, hi = self.alloc(tag, nxt)
            self.steps[tag] = nxt
        return lo, hi

    def tags(self):
        cur = self.conn.cursor()
        try:
            cur.execute(GET_ALL_TAGS)
            out = [r[0] for r in cur.fetchall()]
            self.conn.commit()
            return out
        finally:
            cur.close()


def connect(host, port, db, user="root", password=""):
    sys.path.append("/usr/lib/python3/dist-packages")
    import pymysql
    return pymysql.connect(host=host, port=int(port), user=user,
                           password=password, database=db, autocommit=False,
                           connect_timeout=10, read_timeout=60,
                           write_timeout=60)


def main():
    import time
    host, port, db, tag, count = sys.argv[1:6]
    pause = int(sys.argv[6]) / 1000.0 if len(sys.argv) > 6 else 0
    node = LeafNode(connect(host, port, db))
    for _ in range(int(count)):
        lo, hi = node.next_segment(tag)
        print("%d %d" % (lo, hi), flush=True)
        time.sleep(pause)


if __name__ == "__main__":
    main()
