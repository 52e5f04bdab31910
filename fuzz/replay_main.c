/* SPDX-License-Identifier: Apache-2.0 */
/*
** replay_main.c -- runs a libFuzzer harness over a corpus without libFuzzer,
** so every normal test build replays the committed corpora.
**
** Usage: fuzz_x_replay DIR|FILE...  Each file is passed once to
** LLVMFuzzerTestOneInput; any crash or sanitizer report fails the test.
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  long n;
  uint8_t *buf;
  if (f == NULL) {
    perror(path);
    return -1;
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  /* An exact-size heap copy, so ASan catches any over-read. */
  buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf == NULL || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
    fclose(f);
    free(buf);
    fprintf(stderr, "%s: read failed\n", path);
    return -1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

static int run_path(const char *path, int *count) {
  struct stat st;
  DIR *d;
  struct dirent *e;
  if (stat(path, &st) != 0) {
    perror(path);
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    (*count)++;
    return run_file(path);
  }
  d = opendir(path);
  if (d == NULL) {
    perror(path);
    return -1;
  }
  while ((e = readdir(d)) != NULL) {
    char sub[4096];
    if (e->d_name[0] == '.')
      continue;
    snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
    if (run_path(sub, count) != 0) {
      closedir(d);
      return -1;
    }
  }
  closedir(d);
  return 0;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; i++)
    if (run_path(argv[i], &count) != 0)
      return 1;
  /* Also run the empty input, which every parser must survive. */
  LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
  if (count == 0) {
    fprintf(stderr, "no corpus files found\n");
    return 1;
  }
  printf("replayed %d inputs\n", count);
  return 0;
}
