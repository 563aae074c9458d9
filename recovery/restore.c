/*
 * What every step of ft-restore shares: messages and agreement over the
 * restore's communicator, and where a stripe's chunks live in the agreed
 * layout.  The survey fills ft__restore_t; rebuild and verify read it.
 */
#include "recovery/restore.h"

#include <stdarg.h>
#include <string.h>

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"

void ft__restore_init(ft__restore_t *r) {
  memset(r, 0, sizeof(*r));
  r->comm = MPI_COMM_NULL;
  ft__dir_init(&r->dir, "");
  for (int i = 0; i < FT_NSLOTS; i++)
    r->slot[i].fd = -1;
}

void ft__restore_free(ft__restore_t *r) {
  for (int i = 0; i < FT_NSLOTS; i++)
    ft__slot_close(&r->slot[i]);
  for (int node = 0; r->adopted && node < r->nnodes; node++)
    ft__slot_close(&r->adopted[node]);
  if (r->meta)
    ft__meta_free(r->meta);
  void *arrays[] = {r->adopted,  r->adopt,   r->all,   r->rank_of_node,
                    r->group_of, r->pos_of,  r->gsize, r->members,
                    r->hosts,    r->chunk_of_group, r->bad, r->damaged};
  for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
    ft__free(arrays[i]);
  r->meta = NULL, r->adopted = NULL, r->adopt = NULL, r->all = NULL;
  r->rank_of_node = r->group_of = r->pos_of = r->gsize = NULL;
  r->members = NULL, r->hosts = NULL, r->chunk_of_group = NULL;
  r->bad = r->damaged = NULL;
}

int ft__rsay(ft__restore_t *r, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ft__vmsgf(rc, r->msg, sizeof(r->msg), fmt, ap);
  va_end(ap);
  return rc;
}

int ft__ragree(ft__restore_t *r, int rc) {
  return ft__agree_msg_napping(r->comm, rc, r->msg, sizeof(r->msg));
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
