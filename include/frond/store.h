/* SPDX-License-Identifier: Apache-2.0 */
/*
** frond/store.h -- tag administration directly on a store: open one,
** create, change, list and delete tags, the bounds and strides of a tag,
** and the repairs of a multi: store's member.
** Part of frond.h, which includes it; see the conventions there.
*/
#ifndef FROND_FROND_STORE_H
#define FROND_FROND_STORE_H

#ifndef FROND_H
#error "include <frond.h>, not <frond/store.h>"
#endif

/* ------------------------------------------------------------------------
** Tag administration
**
** Directly on a store, without an allocator: what `frond tag` and the
** server's admin endpoints call. An allocator running on the same store
** sees a change at its next refresh (frond_seg_refresh_tag for one now).
*/
typedef struct frond_tag_row {
  char tag[FROND_TAG_MAX + 1];
  int64_t max_id; /* next unallocated ID */
  int64_t step;
  char description[257];
  char update_time[32]; /* as the database prints it */
} frond_tag_row;

/* Open / close a store connection (not thread-safe: one thread at a time). */
FROND_EXPORT int frond_store_open(frond_store **out, const char *store_uri,
                                  frond_error *err);
FROND_EXPORT void frond_store_close(frond_store *st);
/*
** Create a tag: the first ID it yields is `start` (the row's max_id), step
** >= 1. A tag deleted from the store leaves a floor (the first ID it had
** not allocated): a tag of the same name starts one step above it, so
** that no ID the old one could have issued comes again, not even to a
** Leaf node that reads the new row's last step without allocating it.
** start 0: the lowest allowed, 1 for a name never used, else the floor
** plus step; a start below that is TAG_FLOOR, naming the floor. Errors:
** TAG_INVALID, TAG_EXISTS, TAG_FLOOR, INVAL, STORE.
*/
FROND_EXPORT int frond_store_tag_create(frond_store *st, const char *tag,
                                        int64_t step, int64_t start,
                                        const char *description,
                                        frond_error *err);
/* All rows sorted by tag into *out (free with frond_free). */
/*
** A tag's sequence attributes (frond_store_tag_create_seq), recorded in
** Frond's own table frond_tag_seq beside Leaf's leaf_alloc (which stays
** unchanged), in the create's transaction; a Leaf node sharing the table
** reads neither: serve such a tag from Frond nodes only.
**
** max: no ID above it is ever issued (0: no bound). The last segment is
** cut at max; past it, every call that issues the tag's IDs fails with
** SEGMENT_EXHAUSTED. There is no wrap (a sequence that starts again
** repeats IDs).
**
** increment and offset (MySQL's auto_increment_increment/_offset,
** tinyid's delta/remainder): every ID of the tag is offset modulo
** increment, 0 <= offset < increment (increment 0 or 1: every number).
** The row's max_id and step keep counting numbers, as Leaf's do: a
** segment of step numbers holds step / increment IDs (give or take one),
** so the step must be at least the increment. Fixed at creation. Ranges
** (frond_seg_range, /v1/segment/{tag}/range, ID.RANGE, INCRBY) hand out
** consecutive numbers and are refused for a strided tag (INVAL).
*/
/* frond_store_tag_create with attributes (NULL: none). Errors as
** frond_store_tag_create, and INVAL for a max below the start, an offset
** not below the increment, a step below the increment, or a store that
** keeps no attributes. */
FROND_EXPORT int frond_store_tag_create_seq(frond_store *st, const char *tag,
                                            int64_t step, int64_t start,
                                            const char *description,
                                            const frond_tag_seq *seq,
                                            frond_error *err);
/* The tag's attributes into *out ({0, 1, 0, 0} for none). Errors:
** TAG_NOT_FOUND, STORE, STORE_MEMBER (multi: members that record two). */
FROND_EXPORT int frond_store_tag_seq(frond_store *st, const char *tag,
                                     frond_tag_seq *out, frond_error *err);
/* An ordered tag's owner as the store records it: its address into addr
** (cap bytes; "" when no one holds the claim: never claimed, or released
** on a clean stop) and the claim's epoch. A claim is not live for being
** recorded: an owner that crashed stays recorded until another node
** takes the tag over. Errors: INVAL (not an ordered tag, or a store that
** serves none), STORE. */
FROND_EXPORT int frond_store_tag_owner(frond_store *st, const char *tag,
                                       char *addr, size_t cap, int64_t *epoch,
                                       frond_error *err);
/*
** Set the tag's bound (0: none). Raising it, or dropping it, is always
** allowed; lowering it (or bounding a tag that had none) is refused with
** TAG_FLOOR below the highest ID the tag may already have issued (its
** max_id - 1; in a multi: store, any member's), also when an allocation
** takes IDs past the new bound while it is written (the old one stays).
** Errors: TAG_NOT_FOUND, TAG_FLOOR, INVAL, STORE, STORE_MEMBER.
*/
FROND_EXPORT int frond_store_tag_set_max(frond_store *st, const char *tag,
                                         int64_t max, frond_error *err);
FROND_EXPORT int frond_store_tag_list(frond_store *st, frond_tag_row **out,
                                      size_t *n, frond_error *err);
FROND_EXPORT int frond_store_tag_get(frond_store *st, const char *tag,
                                     frond_tag_row *out, frond_error *err);
FROND_EXPORT int frond_store_tag_set_step(frond_store *st, const char *tag,
                                          int64_t step, frond_error *err);
/* Delete a tag; in the same transaction, its floor rises to the row's
** max_id (frond_store_tag_create). */
FROND_EXPORT int frond_store_tag_delete(frond_store *st, const char *tag,
                                        frond_error *err);
/*
** Move a tag forward so that it issues no ID below `to` (after the store
** was restored from a backup: `to` above every ID handed out since the
** backup). Never back: TAG_FLOOR when `to` is below what the tag may
** already have issued (its max_id; in a multi: store, what any member
** may have) or below its floor. Running allocators move up at their
** next allocation; what they buffer is above the old row, never below.
** Errors: TAG_NOT_FOUND, TAG_FLOOR, TAG_INVALID, STORE.
*/
FROND_EXPORT int frond_store_tag_advance(frond_store *st, const char *tag,
                                         int64_t to, frond_error *err);
/* The floor of `tag` now: 1 for a name never used, else the floor a
** deleted tag of that name left (in a multi: store, the lowest ID no
** member may have handed out). frond_store_tag_create accepts a start one
** step above it, or 1 for a name never used. */
FROND_EXPORT int frond_store_tag_floor(frond_store *st, const char *tag,
                                       int64_t *first, frond_error *err);
/*
** multi: stores only. Member `member` lost allocations (an empty database
** put in its place, a restore from an older backup): it is refused with
** STORE_MEMBER_STALE until this moves each of its tags' rows above
** everything any member, by their rows, floors and marks, may have handed
** out, and records its place. Every member must answer. fn (may be NULL)
** is told each row moved: the first global ID the member would have
** handed out next (0: it had no row) and the one it hands out now.
** Errors: INVAL (not a multi: store, no such member), STORE_MEMBER, STORE.
*/
typedef void (*frond_repair_fn)(void *ctx, const char *tag, int64_t from,
                                int64_t to);
FROND_EXPORT int frond_store_member_repair(frond_store *st, int member,
                                           frond_repair_fn fn, void *ctx,
                                           frond_error *err);

#endif /* FROND_FROND_STORE_H */
