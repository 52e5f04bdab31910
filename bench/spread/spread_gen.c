/* SPDX-License-Identifier: Apache-2.0 */
/*
** spread_gen.c -- the IDs bench/spread/run.sh inserts: COUNT snowflake IDs
** of one kind, one decimal number a line, in the order they are issued.
**
**   spread_gen plain|reverse|shard COUNT USERS KEYFILE
**
** plain: the IDs as issued; reverse: decimal:reverse=yes; shard:
** decimal:shard=4, each ID for one of USERS user keys in turn ("user-N",
** N cycling as requests from many users would). Every kind takes the IDs
** of one generator on the layout time=41,node=4,seq=10,unit=1ms,epoch=
** 2025-01-01 (room above the IDs for 4 shard bits), node 1, no high-water
** file: IDs thrown away after the run.
*/
#include <frond.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1024

int main(int argc, char **argv) {
  frond_layout l;
  frond_gen *g;
  frond_gen_options o;
  frond_format *f = NULL;
  frond_order_keys *keys = NULL;
  frond_error err = {0, ""};
  char *buf;
  long long count, users, done = 0, u = 0;
  size_t stride;
  const char *spec;
  if (argc != 5 || (count = atoll(argv[2])) <= 0 ||
      (users = atoll(argv[3])) <= 0) {
    fprintf(stderr, "usage: spread_gen plain|reverse|shard COUNT USERS "
                    "KEYFILE\n");
    return 2;
  }
  spec = strcmp(argv[1], "plain") == 0     ? "decimal"
         : strcmp(argv[1], "reverse") == 0 ? "decimal:reverse=yes"
         : strcmp(argv[1], "shard") == 0   ? "decimal:shard=4"
                                           : NULL;
  if (spec == NULL) {
    fprintf(stderr, "spread_gen: kind is plain, reverse or shard\n");
    return 2;
  }
  frond_gen_options_init(&o);
  if (frond_layout_parse("time=41,node=4,seq=10,unit=1ms,epoch=2025-01-01", &l,
                         &err) != 0 ||
      frond_gen_create(&g, &l, 1, &o, &err) != 0 ||
      frond_order_keys_load(argv[4], &keys, &err) != 0 ||
      frond_format_create(&f, spec, keys, NULL, NULL, &err) != 0) {
    fprintf(stderr, "spread_gen: %s: %s\n", frond_err_name(err.code),
            err.message);
    return 1;
  }
  /* A benchmark on throwaway IDs: no place shares the key. */
  frond_format_skip_check(f);
  stride = frond_format_length(f) + 1;
  if ((buf = malloc(CHUNK * stride)) == NULL)
    return 1;
  while (done < count) {
    frond_format_source src = {g, NULL, NULL, 0};
    size_t n = count - done < CHUNK ? (size_t)(count - done) : CHUNK;
    int rc;
    if (frond_format_shard_bits(f) > 0) {
      /* One ID per user in turn. */
      for (size_t i = 0; i < n; i++, u = (u + 1) % users) {
        char key[32];
        snprintf(key, sizeof(key), "user-%lld", u);
        if ((rc = frond_format_next_for(f, &src, key, strlen(key), 1,
                                        buf + i * stride, stride, &err)) != 0)
          break;
      }
      rc = err.code;
    } else {
      rc = frond_format_next_n(f, &src, n, buf, stride, &err);
    }
    if (rc != 0) {
      fprintf(stderr, "spread_gen: %s: %s\n", frond_err_name(err.code),
              err.message);
      return 1;
    }
    for (size_t i = 0; i < n; i++)
      printf("%s\n", buf + i * stride);
    done += (long long)n;
  }
  free(buf);
  frond_format_free(f);
  frond_order_keys_free(keys);
  frond_gen_close(g, NULL);
  return fflush(stdout) == 0 ? 0 : 1;
}
