/* How steady is a CPU here? A fixed piece of integer work (2e6 multiply-adds) timed 400 times in a row on the core
 * this process is bound to (taskset -c N vcpu_speed). On bare metal every chunk takes the same time within a few
 * percent; on a virtual CPU that shares its physical core with others, chunks run at full speed in some periods and
 * at a fraction of it in others, and every benchmark of sub-millisecond operations inherits those periods. Prints
 * the chunk times (ms) in order, then: min p10 median p90 max, and the share of chunks slower than 1.4 x the min.
 *   cc -O1 -o vcpu_speed tests/perf/vcpu_speed.c    (the work loop must not be optimised away: volatile) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const int chunks = argc > 1 ? atoi(argv[1]) : 400;
  double* t = malloc(sizeof(double) * chunks);
  double* sorted = malloc(sizeof(double) * chunks);
  volatile unsigned long sink = 0;
  for (int k = 0; k < chunks; ++k) {
    const double start = now_ms();
    for (unsigned long i = 0; i < 2000000; ++i) sink += i * i;
    t[k] = now_ms() - start;
  }
  for (int k = 0; k < chunks; ++k) printf("%.2f%c", t[k], k % 20 == 19 ? '\n' : ' ');
  for (int k = 0; k < chunks; ++k) sorted[k] = t[k];
  qsort(sorted, chunks, sizeof(double), by_value);
  int slow = 0;
  for (int k = 0; k < chunks; ++k) slow += t[k] > 1.4 * sorted[0];
  printf("\nmin %.2f p10 %.2f median %.2f p90 %.2f max %.2f slow %.1f%%\n", sorted[0], sorted[chunks / 10],
         sorted[chunks / 2], sorted[chunks * 9 / 10], sorted[chunks - 1], 100.0 * slow / chunks);
  free(t);
  free(sorted);
  return 0;
}
