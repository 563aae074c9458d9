/*
 * The rebuild of the erased chunks: a task list computed identically on
 * every rank (one task per erased chunk of every stripe), walked in the
 * same order by all, so each rank knows when it is a source, when it is
 * the owner that decodes, and when it has nothing to do.  Sources send
 * their chunk in pieces straight from their slot; the owner decodes each
 * piece into its own slot, so no chunk is ever staged whole.
 *
 * The owner of an erased chunk is the spare that replaces a lost node, or,
 * for a chunk that failed its CRC or a member whose copy of the version is
 * damaged or missing, the node that holds it (its slot made anew first).
 * Decode uses the first k healthy chunks of the stripe and marks the other
 * m as erased, so the codec always solves with exactly k known chunks.
 *
 * A rebuilt chunk's CRC is computed where its bytes are made (the chain's
 * last link, as it sends them) and sent after them: the owner seals the slot
 * with it without reading the chunk back, and a byte that arrives wrong, or
 * is corrupted on the owner before anyone reads it, fails that CRC when the
 * slot is read, instead of being sealed as the rebuilt data.
 */
#include "recovery/chain.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ec/codec.h"
#include "ec/crc.h"
#include "recovery/restore.h"
#include "recovery/tags.h"
#include "snapshot/ctl.h"
#include "snapshot/hold.h"

/* Is this chunk a task of the rebuild?  An adopted node's parity stays
 * lost: the relaunched job, on fewer nodes, encodes anew at its first
 * snapshot. */
static int wanted(const ft__restore_t *r, int g, int node, int role) {
  return ft__chunk_bad(r, node, role) &&
         !(r->adopt[node] && role >= ft__group_k(r, g));
}

/* The slot an erased chunk of node is rebuilt into, on its owner. */
static ft__slot_t *target(ft__restore_t *r, int node) {
  return r->adopt[node] ? &r->adopted[node] : &r->slot[r->my_slot];
}

/* ---- one erased chunk ---- */

typedef struct task {
  int g, s, role, node, owner; /* owner: rank that decodes */
  int src_role[FT_MAX_CHUNKS], src_rank[FT_MAX_CHUNKS];
  int failed; /* this rank failed in an earlier task: its message stands */
} task_t;

static void sources(const ft__restore_t *r, task_t *t) {
  int n = r->gsize[t->g], k = ft__group_k(r, t->g), got = 0;
  for (int role = 0; role < n && got < k; role++) {
    int node = ft__node_at(r, t->g, t->s, role);
    if (ft__chunk_bad(r, node, role))
      continue;
    t->src_role[got] = role;
    t->src_rank[got++] = r->rank_of_node[node];
  }
}

/* A chunk is rebuilt along a chain: the k sources, in order,
 * each add their term of the decode to the running sum the one before sent
 * (ft__codec_decode_update), piece by piece, and the last sends it to the
 * owner, which receives the rebuilt chunk straight into its slot.  Every
 * link carries the chunk's bytes once: the owner (a spare's one link)
 * receives 1x the lost bytes instead of k x, and the decode's work is
 * spread over the sources.  An owner that holds a source itself (a shrink's
 * adopting survivor) is the chain's last link and sums into its slot. */
#define CHAIN_BUFS 4  /* pieces in flight at a link: received, summed, sent */
#define RECV_BATCH 64 /* pieces the owner posts at once */

typedef struct chain {
  int hop[FT_MAX_CHUNKS]; /* source index (into t->src_*) of each link */
  int erased[FT_MAX_CHUNKS], ne, row; /* the pattern; row: t->role's */
} chain_t;

static void plan_chain(const ft__restore_t *r, const task_t *t, chain_t *ch) {
  int n = r->gsize[t->g], k = ft__group_k(r, t->g), is_src[FT_MAX_CHUNKS] = {0};
  int h = 0, mine = -1;
  for (int i = 0; i < k; i++) {
    is_src[t->src_role[i]] = 1;
    if (t->src_rank[i] == t->owner)
      mine = i;
    else
      ch->hop[h++] = i;
  }
  if (mine >= 0)
    ch->hop[h++] = mine;
  ch->ne = 0;
  for (int role = 0; role < n; role++)
    if (!is_src[role]) {
      if (role == t->role)
        ch->row = ch->ne;
      ch->erased[ch->ne++] = role;
    }
}

/* In the middle of rebuilding a chunk: the hold point, then the fault. */
static void midway(ft__restore_t *r) {
  if (r->ctl &&
      ft__hold_at(r->ctl,
                  ft__hold_gate(r->ctl, &r->ctl->smp_gate_step, r->step,
                                1u << FT_HOLD_RESTORE),
                  FT_HOLD_RESTORE, r->step) == FT_HOLD_EXPIRED) {
    char m[160];
    ft__hold_expired_msg(r->ctl, FT_HOLD_RESTORE, r->step, m, sizeof(m));
    fprintf(stderr, "ft-restore: %s: %s\n", r->host, m);
    fflush(stderr);
  }
  ft__fault_point(&r->fault, "restore", r->world_rank, r->host);
}

/* FT_FAULT=flip:POINT: one byte of chunk `role` of stripe t (at buf) is
 * corrupted here, as memory or a link might, to show that nothing after
 * this point takes such bytes for good ones.  Points: rebuilt (the owner,
 * the chunk whole) and source (a source, before it gives its chunk). */
static void flip_point(ft__restore_t *r, const char *point, const task_t *t,
                       int role, uint8_t *buf) {
  if (!ft__fault_point(&r->fault, point, r->world_rank, r->host))
    return;
  size_t at = r->chunk_of_group[t->g] / 2;
  buf[at] ^= 0x5a;
  fprintf(stderr,
          "ftrt: fault point '%s' (FT_FAULT) flipped byte %zu of %s chunk %d "
          "(group %d stripe %d) on %s, pid %d\n",
          point, at, role < ft__group_k(r, t->g) ? "data" : "parity", role,
          t->g, t->s, r->host, (int)getpid());
  fflush(stderr);
}

static void rebuilt(ft__restore_t *r, const task_t *t, uint8_t *dst) {
  flip_point(r, "rebuilt", t, t->role, dst);
}

/* FT_FAULT=fail:link: a link that sends its sum on fails halfway through
 * its chunk, as a decode that failed would; the chain must still end on
 * every rank. */
static int link_fault(ft__restore_t *r, const task_t *t) {
  if (!ft__fault_point(&r->fault, "link", r->world_rank, r->host))
    return FT_OK;
  return ft__rsay(
      r, FT_EIO,
      "%s (rank %d): fault point 'link' (FT_FAULT) failed its "
      "link of the rebuild of group %d stripe %d (%s chunk %d), "
      "pid %d",
      r->host, r->rank, t->g, t->s,
      t->role < ft__group_k(r, t->g) ? "data" : "parity",
      t->role < ft__group_k(r, t->g) ? t->role : t->role - ft__group_k(r, t->g),
      (int)getpid());
}

/* Bytes of piece q of a chunk of `chunk` bytes cut in pieces of `piece`. */
static size_t piece_len(size_t chunk, size_t piece, size_t q) {
  return chunk - q * piece < piece ? chunk - q * piece : piece;
}

static int wait1(MPI_Request *req) {
  return MPI_Wait(req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? FT_OK : FT_EMPI;
}

/* A received piece must be exactly as long as asked: MPI accepts a shorter
 * message silently, and the slot's CRCs are computed over what arrived. */
static int got_all(ft__restore_t *r, const MPI_Status *st, size_t len) {
  int n = -1;
  MPI_Get_count(st, MPI_BYTE, &n);
  if (n == (int)len)
    return FT_OK;
  return ft__rsay(r, FT_ECORRUPT,
                  "%s: a piece of the rebuild from rank %d had %d bytes, not "
                  "%zu: the nodes disagree on the chunk or piece size "
                  "(FT_PIECE_SIZE); nothing of it is kept",
                  r->host, st->MPI_SOURCE, n, len);
}

/* A status passed along a chain after a chunk's pieces: the first failure
 * of a link at or before the sender (FT_OK: none), and the last link's CRC
 * of the chunk.  Every link sends one on and every link but the first
 * takes one, so that a link that failed still ends the chain: it goes on
 * passing pieces (their bytes no longer matter) and says so at the end,
 * and no link after it waits for a piece that never comes. */
static int pass_status(ft__restore_t *r, const task_t *t, int prev, int next,
                       int bad, uint64_t send_sum, uint64_t *got_sum) {
  uint64_t end[2] = {0, 0};
  if (prev >= 0 && MPI_Recv(end, 2, MPI_UINT64_T, prev, TAG_CRC, r->comm,
                            MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return FT_EMPI;
  if (got_sum)
    *got_sum = end[1];
  if (prev >= 0 && bad == FT_OK && (int64_t)end[0] != FT_OK) {
    if (!t->failed)
      r->msg[0] = '\0'; /* the link that failed says why */
    bad = (int)(int64_t)end[0];
  }
  uint64_t out[2] = {(uint64_t)(int64_t)bad, send_sum};
  /* eager: never leaves this rank waiting */
  if (next >= 0 &&
      MPI_Send(out, 2, MPI_UINT64_T, next, TAG_CRC, r->comm) != MPI_SUCCESS)
    return FT_EMPI;
  return bad;
}

/* Link h of the chain: this rank holds source ch->hop[h].  Set by the
 * caller: r, t, ch, h, codec, bufs, dst; the rest by place_link. */
typedef struct link {
  ft__restore_t *r;
  const task_t *t;
  const chain_t *ch;
  int h;
  ft__codec_t *codec; /* for the group's k */
  uint8_t *bufs;      /* CHAIN_BUFS pieces */
  uint8_t *dst;       /* the owner's chunk in its slot, or NULL */
  int i;              /* this rank's source (into t->src_*) */
  int last;           /* the chain's last link: it makes the chunk's CRC */
  /* Ranks of the links before and after (-1: none); after the last link
   * comes the owner, -1 where that is this rank. */
  int prev, next;
  const uint8_t *mine; /* this source's chunk in its slot */
  size_t chunk, piece; /* bytes of the chunk and of a piece */
  size_t np;           /* pieces of the chunk */
  uint64_t sum;        /* the last link's CRC of the chunk, piece by piece */
  uint64_t src;        /* this source's, checked against its seal at the end */
  MPI_Request rreq[CHAIN_BUFS], sreq[CHAIN_BUFS];
} link_t;

static void place_link(link_t *l) {
  ft__restore_t *r = l->r;
  const task_t *t = l->t;
  int k = ft__group_k(r, t->g), h = l->h;
  l->i = l->ch->hop[h];
  l->last = h + 1 == k;
  l->prev = h > 0 ? t->src_rank[l->ch->hop[h - 1]] : -1;
  if (h + 1 < k)
    l->next = t->src_rank[l->ch->hop[h + 1]];
  else /* the owner, unless this rank is the owner */
    l->next = t->owner == r->rank ? -1 : t->owner;
  l->mine = ft__slot_chunk(&r->slot[r->my_slot], (uint32_t)t->src_role[l->i]);
  l->chunk = r->chunk_of_group[t->g];
  l->piece = r->piece_bytes;
  l->np = (l->chunk + l->piece - 1) / l->piece;
  l->sum = l->src = 0;
  for (int b = 0; b < CHAIN_BUFS; b++)
    l->rreq[b] = l->sreq[b] = MPI_REQUEST_NULL;
}

static size_t link_len(const link_t *l, size_t q) {
  return piece_len(l->chunk, l->piece, q);
}

/* Where piece q is received and summed: straight in the owner's slot on
 * a last link that is the owner, else in one of the link's buffers. */
static uint8_t *link_at(const link_t *l, size_t q) {
  return l->next < 0 ? l->dst + q * l->piece
                     : l->bufs + (q % CHAIN_BUFS) * l->piece;
}

static void post_piece(link_t *l, size_t q) {
  MPI_Irecv(link_at(l, q), (int)link_len(l, q), MPI_BYTE, l->prev, TAG_PIECE,
            l->r->comm, &l->rreq[q % CHAIN_BUFS]);
}

/* Piece q's buffer ready to sum in: on the first link, once what it held
 * was sent; on any other, once piece q arrived from the link before (q+1
 * posted first, in its buffer once that was sent), its length checked into
 * *bad.  Returns FT_EMPI where MPI itself failed, else FT_OK. */
static int take_piece(link_t *l, size_t q, int *bad) {
  if (l->prev < 0)
    return wait1(&l->sreq[q % CHAIN_BUFS]); /* free to write again */
  if (q + 1 < l->np) { /* post q+1 once its buffer is sent */
    int rc = wait1(&l->sreq[(q + 1) % CHAIN_BUFS]);
    if (rc)
      return rc;
    post_piece(l, q + 1);
  }
  MPI_Status st;
  if (MPI_Wait(&l->rreq[q % CHAIN_BUFS], &st) != MPI_SUCCESS)
    return FT_EMPI;
  if (*bad == FT_OK)
    *bad = got_all(l->r, &st, link_len(l, q));
  return FT_OK;
}

/* This source's term of piece q, on a link that has not failed: added to
 * the sum in acc (the first link's term is the sum so far: set, not added
 * to zeros), and the CRCs taken.  The link fault point halfway through the
 * chunk.  Returns the link's failure, with its message. */
static int add_term(link_t *l, size_t q, uint8_t *acc) {
  ft__restore_t *r = l->r;
  const task_t *t = l->t;
  const chain_t *ch = l->ch;
  int k = ft__group_k(r, t->g), rc = FT_OK;
  const uint8_t *in = l->mine + q * l->piece;
  size_t len = link_len(l, q);
  if (l->next >= 0 && q == l->np / 2 && (rc = link_fault(r, t)))
    return rc;
  if ((rc = (l->prev < 0 ? ft__codec_decode_first : ft__codec_decode_update)(
           l->codec, len, ch->erased, ch->ne, ch->row, l->i, in, acc)))
    return ft__rsay(
        r, rc,
        "%s (rank %d): the decode of %s chunk %d of group %d stripe %d "
        "failed",
        r->host, r->rank, t->role < k ? "data" : "parity",
        t->role < k ? t->role : t->role - k, t->g, t->s);
  l->src = ft__crc64(l->src, in, len);
  if (l->last)
    l->sum = ft__crc64(l->sum, acc, len);
  return FT_OK;
}

/* Piece q on its way: sent to the next link (or the owner); on the owner,
 * the hold and fault points halfway through the chunk. */
static void give_piece(link_t *l, size_t q, uint8_t *acc) {
  if (l->next >= 0)
    MPI_Isend(acc, (int)link_len(l, q), MPI_BYTE, l->next, TAG_PIECE,
              l->r->comm, &l->sreq[q % CHAIN_BUFS]);
  else if (q == l->np / 2)
    midway(l->r);
}

/* The chunk's end, reached by every link whichever way its pieces went:
 * its sends finished, then the status passed on (pass_status), which makes
 * rc this link's or an earlier one's failure; on the owner, the CRC.  The
 * bytes this source gave are the ones sealed (the survey checked them,
 * memory may have changed since): else the chunk just made is of other
 * bytes.  Said after the chain ran, so that no link waits. */
static int end_link(link_t *l, int rc, int bad, uint64_t *crc, int *src_bad) {
  ft__restore_t *r = l->r;
  if (MPI_Waitall(CHAIN_BUFS, l->sreq, MPI_STATUSES_IGNORE) != MPI_SUCCESS &&
      rc == FT_OK)
    rc = FT_EMPI;
  if (rc == FT_OK)
    rc = pass_status(r, l->t, l->prev, l->next, bad, l->sum, NULL);
  if (rc == FT_OK && l->next < 0) {
    *crc = l->sum;
    rebuilt(r, l->t, l->dst);
  }
  *src_bad = rc == FT_OK &&
             l->src != r->slot[r->my_slot].hdr->crc[l->t->src_role[l->i]];
  return rc;
}

/* A link: receive the sum of piece q from the link before (the first has
 * none: its term starts the sum), add this source's term, send it on (to
 * the next link, or to the owner); the last link, when it is the owner,
 * sums into dst.  Piece q+1 is received while q is summed.  Only a failure
 * of MPI itself (rc) stops a link early; after any other (bad), it passes
 * pieces on untouched (a first link, zeros), so that every link after it
 * still gets every piece, and its status says it failed. */
static int chain_link(link_t *l, uint64_t *crc, int *src_bad) {
  int rc = FT_OK, bad = FT_OK;
  place_link(l);
  flip_point(l->r, "source", l->t, l->t->src_role[l->i], (uint8_t *)l->mine);
  if (l->prev >= 0 && l->np > 0)
    post_piece(l, 0);
  for (size_t q = 0; q < l->np; q++) {
    uint8_t *acc = link_at(l, q);
    if ((rc = take_piece(l, q, &bad)))
      break;
    if (bad == FT_OK)
      bad = add_term(l, q, acc);
    if (bad != FT_OK && l->prev < 0)
      memset(acc, 0, link_len(l, q)); /* a failed first link passes zeros */
    give_piece(l, q, acc);
  }
  return end_link(l, rc, bad, crc, src_bad);
}

/* The owner that holds no source: the chain's sum, straight into dst,
 * RECV_BATCH pieces at a time; every piece and the last link's status are
 * taken even after a short piece, so that nothing is left for the next
 * task to take for its own. */
static int chain_end(ft__restore_t *r, const task_t *t, const chain_t *ch,
                     uint8_t *dst, uint64_t *crc) {
  int last = t->src_rank[ch->hop[ft__group_k(r, t->g) - 1]];
  size_t chunk = r->chunk_of_group[t->g], piece = r->piece_bytes;
  size_t np = (chunk + piece - 1) / piece;
  MPI_Request req[RECV_BATCH];
  MPI_Status st[RECV_BATCH];
  int rc = FT_OK, bad = FT_OK, held = 0;
  for (size_t first = 0; first < np && rc == FT_OK; first += RECV_BATCH) {
    int nb = 0;
    for (size_t q = first; q < np && nb < RECV_BATCH; q++, nb++) {
      MPI_Irecv(dst + q * piece, (int)piece_len(chunk, piece, q), MPI_BYTE,
                last, TAG_PIECE, r->comm, &req[nb]);
    }
    if (MPI_Waitall(nb, req, st) != MPI_SUCCESS)
      rc = FT_EMPI;
    for (int i = 0; rc == FT_OK && bad == FT_OK && i < nb; i++)
      bad = got_all(r, &st[i], piece_len(chunk, piece, first + (size_t)i));
    if (rc == FT_OK && !held && first + (size_t)nb > np / 2) {
      midway(r); /* once half of the chunk is in */
      held = 1;
    }
  }
  uint64_t sum = 0; /* the last link's CRC of the chunk */
  if (rc == FT_OK)
    rc = pass_status(r, t, last, -1, bad, 0, &sum);
  if (rc == FT_OK) {
    *crc = sum;
    rebuilt(r, t, dst);
  }
  return rc;
}

/* On the owner, *crc: the CRC the chunk was made with; on a source,
 * *src_bad: its chunk no longer matches its CRC. */
static int run_task(ft__restore_t *r, task_t *t, uint8_t *bufs,
                    ft__codec_t *const *codec, uint64_t *crc, int *src_bad) {
  sources(r, t);
  chain_t ch;
  plan_chain(r, t, &ch);
  uint8_t *dst = t->owner == r->rank
                     ? ft__slot_chunk(target(r, t->node), (uint32_t)t->role)
                     : NULL;
  for (int h = 0; h < ft__group_k(r, t->g); h++)
    if (t->src_rank[ch.hop[h]] == r->rank) {
      link_t l = {.r = r,
                  .t = t,
                  .ch = &ch,
                  .h = h,
                  .codec = codec[ft__group_k(r, t->g)],
                  .bufs = bufs,
                  .dst = dst};
      return chain_link(&l, crc, src_bad);
    }
  return t->owner == r->rank ? chain_end(r, t, &ch, dst, crc) : FT_OK;
}

/* ---- every erased chunk ---- */

static int owner_of(const ft__restore_t *r, int node, const int *helper_of) {
  int rank = r->rank_of_node[node];
  return rank >= 0 ? rank : helper_of[node];
}

static void progress(const ft__restore_t *r, const task_t *t, int node,
                     int done, int total) {
  if (r->rank != 0 || r->opts.quiet || r->opts.json)
    return;
  printf(
      "ft-restore: [%d/%d] group %d stripe %d: %s chunk %d of %s -> %s\n", done,
      total, t->g, t->s, t->role < ft__group_k(r, t->g) ? "data" : "parity",
      t->role < ft__group_k(r, t->g) ? t->role : t->role - ft__group_k(r, t->g),
      r->hosts[node], r->all[t->owner].host);
  fflush(stdout);
}

int ft__count_tasks(const ft__restore_t *r) {
  int total = 0;
  for (int g = 0; g < r->ngroups; g++)
    for (int s = 0; s < r->gsize[g]; s++)
      for (int role = 0; role < r->gsize[g]; role++)
        total += wanted(r, g, ft__node_at(r, g, s, role), role);
  return total;
}

/* Room to decode and a codec for every group's k, made before the first
 * task: an owner must not fail for memory while its sources send to it. */
static int alloc_decode(ft__restore_t *r, uint8_t **bufs, ft__codec_t **codec) {
  int rc = FT_OK;
  if (!(*bufs = ft__malloc((size_t)CHAIN_BUFS * r->piece_bytes)))
    rc = FT_ENOMEM;
  for (int g = 0; rc == FT_OK && g < r->ngroups; g++) {
    int k = ft__group_k(r, g);
    if (!codec[k])
      rc = ft__codec_create(k, r->m, &codec[k]);
  }
  if (rc == FT_ENOMEM)
    ft__rsay(r, rc, "%s: out of memory for the decode buffers", r->host);
  return rc;
}

int ft__rebuild_all(ft__restore_t *r, const int *helper_of, ft__made_t *made) {
  uint8_t *bufs = NULL;
  ft__codec_t *codec[FT_RESTORE_MAX_GROUP] = {0};
  int rc = ft__ragree(r, alloc_decode(r, &bufs, codec));
  int done = 0, total = ft__count_tasks(r), late = FT_OK;
  for (int g = 0; g < r->ngroups && rc == FT_OK; g++)
    for (int s = 0; s < r->gsize[g] && rc == FT_OK; s++)
      for (int role = 0; role < r->gsize[g] && rc == FT_OK; role++) {
        int node = ft__node_at(r, g, s, role);
        if (!wanted(r, g, node, role))
          continue;
        task_t t = {.g = g,
                    .s = s,
                    .role = role,
                    .node = node,
                    .owner = owner_of(r, node, helper_of),
                    .failed = late != FT_OK};
        progress(r, &t, node, ++done, total);
        uint64_t crc = 0;
        int src_bad = 0;
        int trc = run_task(r, &t, bufs, codec, &crc, &src_bad);
        /* Every task still runs after a failure of this rank's part in one
         * (its chain ended, the others wait for this rank in theirs); only
         * MPI failing stops (in practice never returned: MPI's errors are
         * fatal, MPI_ERRORS_ARE_FATAL, and mpirun ends the job). */
        if (trc == FT_EMPI)
          rc = trc;
        else if (trc != FT_OK && late == FT_OK)
          late = trc;
        if (src_bad && late == FT_OK)
          late =
              ft__rsay(r, FT_ECORRUPT,
                       "%s: a chunk of its copy of version %llu (group %d "
                       "stripe %d) no longer matches its CRC, checked by the "
                       "survey: the rebuild from it is refused and nothing "
                       "is sealed; run ft-restore again (it finds the "
                       "chunk corrupt)",
                       r->host, (unsigned long long)r->version, g, s);
        if (trc == FT_OK && t.owner == r->rank) {
          ft__made_t *m = &made[r->adopt[node] ? node : r->nnodes];
          m->crc[role] = crc;
          m->got[role] = 1;
        }
        r->bytes_rebuilt += r->chunk_of_group[g];
      }
  for (int k = 0; k < FT_RESTORE_MAX_GROUP; k++)
    ft__codec_destroy(codec[k]);
  ft__free(bufs);
  return rc ? rc : late;
}
