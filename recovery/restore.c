/*
 * What every step of ft-restore shares: messages and agreement over the
 * restore's communicator, and where a stripe's chunks live in the agreed
 * layout.  The survey fills ft__restore_t; rebuild and verify read it.
 */
#include "recovery/restore.h"

#include <stdarg.h>

#include "base/agree.h"
#include "base/error.h"

int ft__rsay(ft__restore_t *r, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ft__vmsgf(rc, r->msg, sizeof(r->msg), fmt, ap);
  va_end(ap);
  return rc;
}

int ft__ragree(ft__restore_t *r, int rc) {
  return ft__agree_msg(r->comm, rc, r->msg, sizeof(r->msg));
}

int ft__group_k(const ft__restore_t *r, int g) { return r->gsize[g] - r->m; }

int ft__node_at(const ft__restore_t *r, int g, int s, int role) {
  int n = r->gsize[g], k = ft__group_k(r, g);
  int pos = role < k ? ft__layout_data_pos(n, r->m, s, role)
                     : ft__layout_parity_pos(n, r->m, s, role - k);
  return r->members[g][pos];
}

int ft__chunk_bad(const ft__restore_t *r, int node, int role) {
  int rank = r->rank_of_node[node];
  return rank < 0 || r->bad[(size_t)rank * FT_MAX_CHUNKS + (size_t)role];
}
