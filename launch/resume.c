/* The order of launch/resume.h. */
#include "launch/resume.h"

#include <stdio.h>
#include <string.h>

int ft__resume_parse(const char *status, ft__resume_store_t *st) {
  for (const char *s = status; s && *s;) {
    unsigned epoch;
    int i, n;
    if (sscanf(s, "layout epoch %u: node %d of %d", &epoch, &i, &n) == 3 &&
        i >= 0 && n > 0 && i < n) {
      st->node = i, st->of = n, st->epoch = epoch;
      return 1;
    }
    s = strchr(s, '\n');
    s = s ? s + 1 : NULL;
  }
  return 0;
}

int ft__resume_order(ft__resume_store_t *st, int n, int want, int *order,
                     int *rebuild) {
  *rebuild = 0;
  if (want <= 0 || n < want)
    return 0;
  /* The newest layout's stores: an older one's is stale (a node replaced
   * or shrunk away before the requeue) and counts as none. */
  int newest = -1;
  for (int i = 0; i < n; i++)
    if (st[i].node >= 0 && (newest < 0 || st[i].epoch > st[newest].epoch))
      newest = i;
  if (newest < 0)
    return 0;
  int nodes = st[newest].of;
  for (int i = 0; i < n; i++)
    if (st[i].node >= 0 && st[i].epoch < st[newest].epoch)
      st[i].node = -1, st[i].stale = 1;
  if (nodes > want)
    return 0;
  for (int i = 0; i < n; i++) {
    if (st[i].node < 0)
      continue;
    if (st[i].of != nodes || st[i].node >= nodes)
      return 0;
    for (int j = 0; j < i; j++)
      if (st[j].node == st[i].node)
        return 0;
  }
  for (int k = 0; k < nodes; k++)
    order[k] = -1;
  for (int i = 0; i < n; i++)
    if (st[i].node >= 0)
      order[st[i].node] = i;
  int next = 0; /* the next node without a store */
  for (int k = 0; k < nodes; k++) {
    if (order[k] >= 0)
      continue;
    while (next < n && st[next].node >= 0)
      next++;
    order[k] = next++;
    *rebuild = 1;
  }
  int k = nodes;
  for (int i = 0; i < n; i++) {
    int used = 0;
    for (int j = 0; j < nodes; j++)
      used |= order[j] == i;
    if (!used)
      order[k++] = i;
  }
  return nodes;
}
