/*
 * The offline checker (ft-restore --verify): every stripe of every group is
 * gathered, piece by piece, at the node that holds its first parity chunk,
 * which recomputes the parity and compares it with the parity held.  With
 * --verify-losses it also pretends that every set of at most m positions of
 * the group is lost, decodes their chunks from the others and compares them
 * with the real bytes, and checks that m+1 losses are refused and reported
 * as lost stripes by the layout.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/codec.h"
#include "recovery/restore.h"
#include "recovery/verify.h"

typedef struct tally {
  long stripes, parity_bad, loss_sets, decode_bad, refused_ok;
} tally_t;

/* Positions of set (a bit mask) as codec roles of stripe s. */
static int roles_of(const ft__restore_t *r, int g, int s, unsigned long set,
                    int *erased) {
  int ne = 0, n = r->gsize[g];
  for (int pos = 0; pos < n; pos++)
    if (set >> pos & 1)
      erased[ne++] = ft__layout_role(n, r->m, s, pos);
  return ne;
}

static void check_losses(const ft__restore_t *r, int g, int s, size_t len,
                         uint8_t **held, uint8_t *scratch, ft__codec_t *codec,
                         tally_t *t) {
  int n = r->gsize[g];
  uint8_t *chunks[FT_MAX_CHUNKS];
  for (unsigned long set = 1; set < (1ul << n); set++) {
    int size = __builtin_popcountl(set), erased[FT_MAX_CHUNKS];
    if (size > r->m + 1)
      continue;
    int ne = roles_of(r, g, s, set, erased);
    for (int role = 0; role < n; role++)
      chunks[role] = held[role];
    for (int i = 0; i < ne; i++) {
      chunks[erased[i]] = scratch + (size_t)i * len;
      memset(chunks[erased[i]], 0xA5, len);
    }
    int rc = ft__codec_decode(codec, len, chunks, erased, ne);
    if (size == r->m + 1) {
      t->refused_ok += rc == FT_ETOOMANY;
      continue;
    }
    t->loss_sets++;
    for (int i = 0; i < ne; i++)
      if (rc != FT_OK || memcmp(chunks[erased[i]], held[erased[i]], len) != 0)
        t->decode_bad++;
  }
}

static int check_parity(const ft__restore_t *r, int g, size_t len,
                        uint8_t **held, uint8_t *scratch, ft__codec_t *codec) {
  int k = ft__group_k(r, g), bad = 0;
  uint8_t *par[FT_MAX_CHUNKS];
  for (int j = 0; j < r->m; j++)
    par[j] = scratch + (size_t)j * len;
  ft__codec_encode(codec, len, (const uint8_t *const *)held, par);
  for (int j = 0; j < r->m; j++)
    bad |= memcmp(par[j], held[k + j], len) != 0;
  return bad;
}

/* Gather stripe s of group g at its checker and check it. */
static int check_stripe(ft__restore_t *r, int g, int s, uint8_t *buf,
                        tally_t *t) {
  int n = r->gsize[g], k = ft__group_k(r, g);
  int checker = r->rank_of_node[ft__node_at(r, g, s, k)];
  size_t chunk = r->chunk_of_group[g], piece = r->piece_bytes;
  uint8_t *held[FT_MAX_CHUNKS];
  uint8_t *scratch = buf + (size_t)n * piece;
  ft__codec_t *codec = NULL;
  /* A checker without a codec still receives the stripe, so that nobody
   * is left in a send; it reports the failure afterwards. */
  int rc = r->rank == checker ? ft__codec_create(k, r->m, &codec) : FT_OK;
  int parity_bad = 0;
  for (size_t off = 0; off < chunk; off += piece) {
    size_t len = chunk - off < piece ? chunk - off : piece;
    for (int role = 0; role < n; role++) {
      int owner = r->rank_of_node[ft__node_at(r, g, s, role)];
      held[role] = buf + (size_t)role * piece;
      const uint8_t *mine =
          owner == r->rank
              ? ft__slot_chunk(&r->slot[r->my_slot], (uint32_t)role) + off
              : NULL;
      if (owner == r->rank && owner == checker)
        memcpy(held[role], mine, len);
      else if (owner == r->rank)
        MPI_Send(mine, (int)len, MPI_BYTE, checker, 4, r->comm);
      else if (r->rank == checker)
        MPI_Recv(held[role], (int)len, MPI_BYTE, owner, 4, r->comm,
                 MPI_STATUS_IGNORE);
    }
    if (r->rank != checker || rc)
      continue;
    parity_bad |= check_parity(r, g, len, held, scratch, codec);
    if (r->opts.verify_losses)
      check_losses(r, g, s, len, held, scratch, codec, t);
  }
  if (r->rank == checker && rc == FT_OK) {
    t->stripes++;
    t->parity_bad += parity_bad;
  }
  ft__codec_destroy(codec);
  if (rc)
    ft__rsay(r, rc, "%s: cannot make a %d+%d codec to check group %d", r->host,
             k, r->m, g);
  return rc;
}

static void report(ft__restore_t *r, const tally_t *sum) {
  int n = snprintf(r->msg, sizeof(r->msg),
                   "verified %ld stripes of version %llu: %ld with parity that "
                   "does not match the data",
                   sum->stripes, (unsigned long long)r->version,
                   sum->parity_bad);
  if (r->opts.verify_losses && n > 0 && (size_t)n < sizeof(r->msg))
    snprintf(r->msg + n, sizeof(r->msg) - (size_t)n,
             "; %ld loss sets of <= m=%d nodes decoded, %ld chunks wrong; "
             "%ld stripe decodes with m+1 losses refused (every one loses "
             "its stripe)",
             sum->loss_sets, r->m, sum->decode_bad, sum->refused_ok);
}

int ft__verify(ft__restore_t *r) {
  for (int g = 0; r->opts.verify_losses && g < r->ngroups; g++)
    if (r->gsize[g] > 24)
      return ft__rsay(r, FT_EINVAL,
                      "--verify-losses tries every loss set: group %d has %d "
                      "nodes, too many (at most 24); use --verify",
                      g, r->gsize[g]);
  for (int node = 0; node < r->nnodes; node++)
    if (r->rank_of_node[node] < 0)
      return ft__rsay(r, FT_EINVAL,
                      "--verify needs every node of the layout; %s is missing",
                      r->hosts[node]);
  for (int i = 0; i < r->size; i++)
    if (r->damaged[i])
      return ft__rsay(r, FT_EINVAL,
                      "--verify needs every node's copy of version %llu; the "
                      "one on %s is damaged or missing (ft-restore without "
                      "--verify rebuilds it)",
                      (unsigned long long)r->version, r->all[i].host);
  size_t piece = r->piece_bytes;
  int widest = 0;
  for (int g = 0; g < r->ngroups; g++)
    widest = r->gsize[g] > widest ? r->gsize[g] : widest;
  uint8_t *buf = ft__malloc((size_t)(2 * widest) * piece);
  int rc = FT_OK;
  if (!buf)
    rc = ft__rsay(r, FT_ENOMEM, "%s: out of memory for the stripe buffers",
                  r->host);
  if ((rc = ft__ragree(r, rc))) {
    ft__free(buf);
    return rc;
  }
  tally_t t = {0}, sum = {0};
  /* Every rank walks every stripe, whatever failed here: the checker of a
   * stripe waits for its members' pieces. */
  for (int g = 0; g < r->ngroups; g++)
    for (int s = 0; s < r->gsize[g]; s++) {
      int src = check_stripe(r, g, s, buf, &t);
      rc = rc ? rc : src;
    }
  ft__free(buf);
  MPI_Reduce(&t, &sum, 5, MPI_LONG, MPI_SUM, 0, r->comm);
  long bad = sum.parity_bad + sum.decode_bad;
  MPI_Bcast(&bad, 1, MPI_LONG, 0, r->comm);
  if (r->rank == 0)
    report(r, &sum);
  if (rc == FT_OK && bad)
    rc = FT_ECORRUPT;
  return rc;
}
