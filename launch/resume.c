/* The order of launch/resume.h. */
#include "launch/resume.h"

#include <stdio.h>
#include <string.h>

int ft__resume_parse(const char *status, int *node, int *of) {
  for (const char *s = status; s && *s;) {
    unsigned epoch;
    int i, n;
    if (sscanf(s, "layout epoch %u: node %d of %d", &epoch, &i, &n) == 3 &&
        i >= 0 && n > 0 && i < n) {
      *node = i, *of = n;
      return 1;
    }
    s = strchr(s, '\n');
    s = s ? s + 1 : NULL;
  }
  return 0;
}

int ft__resume_order(const int *store, const int *of, int n, int want,
                     int *order, int *rebuild) {
  int stores = 0;
  *rebuild = 0;
  if (want <= 0 || n < want)
    return 0;
  for (int i = 0; i < n; i++) {
    if (store[i] < 0)
      continue;
    stores++;
    if (of[i] != want || store[i] >= want)
      return 0;
    for (int j = 0; j < i; j++)
      if (store[j] == store[i])
        return 0;
  }
  if (!stores)
    return 0;
  for (int k = 0; k < want; k++)
    order[k] = -1;
  for (int i = 0; i < n; i++)
    if (store[i] >= 0)
      order[store[i]] = i;
  int next = 0; /* the next node without a store */
  for (int k = 0; k < want; k++) {
    if (order[k] >= 0)
      continue;
    while (next < n && store[next] >= 0)
      next++;
    order[k] = next++;
    *rebuild = 1;
  }
  int k = want;
  for (int i = 0; i < n; i++) {
    int used = 0;
    for (int j = 0; j < want; j++)
      used |= order[j] == i;
    if (!used)
      order[k++] = i;
  }
  return 1;
}
