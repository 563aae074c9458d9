/*
 * The nodes of the job and their groups, at the SMP's start-up
 * (collective).  Each SMP describes itself (host, failure domain, what its
 * store holds) in one allgather.  The stores must agree: one run id, one
 * layout epoch, a stored layout of this node count held by every node or by
 * none; else the launch is refused, naming the hosts.  A relaunch keeps the
 * stored node order, a fresh job orders by failure domain and hostname.
 * The sorted nodes are cut into erasure-coding groups (ec/layout.h), and
 * this node's group gets a communicator of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ec/layout.h"
#include "runtime/smp_impl.h"

/* A relaunch keeps the node order of the stored layout (ft-restore may have
 * put a spare with another hostname in a lost node's place); a fresh job
 * orders by failure domain and hostname.  Both at once is an error. */
static int cmp_node(const void *a, const void *b) {
  const node_id_t *x = a, *y = b;
  if (x->stored_node != y->stored_node)
    return x->stored_node - y->stored_node;
  int d = strcmp(x->domain, y->domain);
  if (!d)
    d = strcmp(x->host, y->host);
  return d ? d : x->rank - y->rank;
}

/* This node's index and the node count a relaunch must have: the stored
 * layout's, or after a shrink the re-sliced job's (store.h). */
static void relaunch_place(const ft__meta_t *m, int *node, int *nnodes) {
  int reslice = m && (m->flags & FT_META_RESLICE);
  *node = !m ? -1 : reslice ? (int)m->next_node : (int)m->node;
  *nnodes = !m ? 0 : reslice ? (int)m->next_nnodes : (int)m->nnodes;
}

/* 64 random bits, never 0 (the "no run" mark). */
static uint64_t new_run_id(void) {
  uint64_t id = 0;
  if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
    id = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() << 32;
  return id ? id : 1;
}

/* Append host to a space-separated list of cap bytes (cut when full). */
static void add_host(char *list, size_t cap, const char *host) {
  size_t used = strlen(list);
  snprintf(list + used, cap - used, "%s%s", used ? " " : "", host);
}

/* A store of an older layout epoch than another node's belongs to a host
 * that was given up after a failure (its node was rebuilt elsewhere): it is
 * stale, and never read as current.  ft-restore rebuilds such a node. */
static int check_epochs(smp_t *s, const node_id_t *all) {
  uint64_t newest = 0;
  for (int i = 0; i < s->nnodes; i++)
    if (all[i].stored_epoch > newest)
      newest = all[i].stored_epoch;
  char stale[256] = "";
  uint64_t old = 0;
  for (int i = 0; i < s->nnodes; i++) {
    /* A pending layout of the newest epoch: killed between the commit of
     * its first version and its promotion (smp_restore.c settle_pending
     * promotes it). */
    if (all[i].stored_node < 0 || all[i].stored_epoch == newest ||
        all[i].pend_epoch == newest)
      continue;
    add_host(stale, sizeof(stale), all[i].host);
    old = all[i].stored_epoch;
  }
  if (!stale[0])
    return FT_OK;
  return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "job '%s': the store on %s is from layout epoch %llu, the "
                  "other nodes' from epoch %llu: a host given up after a "
                  "failure, whose node was rebuilt elsewhere (stale). Run "
                  "ft-restore on these nodes (ft-launch --restarts does): it "
                  "rebuilds that node from the others; or launch on the "
                  "hosts of the newest layout",
                  s->c->cfg.job, stale, (unsigned long long)old,
                  (unsigned long long)newest);
}

/* The run every stored metadata belongs to, or a new one (proposed by the
 * first node, so that every SMP picks the same) when none has any.  Stores
 * of two runs of one job name never mix: refused, naming the hosts. */
static int check_runs(smp_t *s, const node_id_t *all) {
  s->job.run = 0;
  for (int i = 0; i < s->nnodes && !s->job.run; i++)
    s->job.run = all[i].stored_run;
  char other[256] = "";
  uint64_t theirs = 0;
  for (int i = 0; i < s->nnodes; i++) {
    if (!all[i].stored_run || all[i].stored_run == s->job.run)
      continue;
    add_host(other, sizeof(other), all[i].host);
    theirs = all[i].stored_run;
  }
  if (!s->job.run)
    s->job.run = all[0].new_run;
  if (!other[0])
    return FT_OK;
  return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                  "job '%s': the stores on %s belong to another run of this "
                  "job name (run %016llx) than the others' (run %016llx): two "
                  "runs never mix. Remove the store that does not belong "
                  "(FT_STORE_ROOT/%s on its host), use another --job, or "
                  "start over with --fresh",
                  s->c->cfg.job, other, (unsigned long long)theirs,
                  (unsigned long long)s->job.run, s->c->cfg.job);
}

static int check_stored(smp_t *s, node_id_t *all) {
  /* FT_FRESH is the same on every node (ft__config_same in ft_init):
   * starting over removes stores everywhere or nowhere. */
  int rc = check_runs(s, all);
  if (rc)
    return rc;
  rc = check_epochs(s, all);
  if (rc)
    return rc;
  int with = 0;
  unsigned char *seen = (unsigned char *)s->scratch; /* nnodes bytes fit */
  memset(seen, 0, (size_t)s->nnodes);
  for (int i = 0; i < s->nnodes; i++) {
    if (all[i].stored_node < 0)
      continue;
    with++;
    int n = all[i].stored_node;
    if (all[i].stored_nnodes != s->nnodes || n >= s->nnodes || seen[n]++)
      rc = FT_EMISMATCH;
  }
  if (rc == FT_OK && with != 0 && with != s->nnodes)
    rc = FT_EMISMATCH;
  if (rc)
    return ft__msgf(rc, s->msg, sizeof(s->msg),
                    "%d of the %d nodes hold a store of job '%s' that does "
                    "not fit this launch (lost or extra nodes?): run "
                    "ft-restore on these nodes first, or use another --job",
                    with, s->nnodes, s->c->cfg.job);
  return FT_OK;
}

/* Every array start-up needs, allocated before its first collective. */
static int alloc_startup(smp_t *s, node_id_t **all, const char ***domains) {
  size_t n = (size_t)s->nnodes;
  *all = ft__calloc(n, sizeof(**all));
  *domains = ft__calloc(n, sizeof(**domains));
  s->job.order = ft__calloc(n, sizeof(*s->job.order));
  s->job.hosts = ft__calloc(n, sizeof(*s->job.hosts));
  s->scratch = ft__calloc(n * FT_NSLOTS, sizeof(*s->scratch));
  if (*all && *domains && s->job.order && s->job.hosts && s->scratch)
    return FT_OK;
  return ft__msgf(FT_ENOMEM, s->msg, sizeof(s->msg),
                  "out of memory for the tables of %d nodes", s->nnodes);
}

/* Does this store hold nothing (a spare's, a new host's)? */
static int store_empty(const smp_t *s) {
  if (s->store.meta || s->store.pend || s->store.damaged)
    return 0;
  for (int i = 0; i < FT_NSLOTS; i++)
    if (s->store.slot[i].map &&
        ft__slot_state(&s->store.slot[i]) >= FT_SLOT_ENCODED)
      return 0;
  return 1;
}

/* Sort the nodes; domains[i] points into all[i] (NULL when no node has a
 * domain: *any says whether one has). */
static int order_nodes(smp_t *s, node_id_t *all, const char **domains,
                       int *any) {
  ft_ctx_t *c = s->c;
  node_id_t mine = {0};
  snprintf(mine.host, sizeof(mine.host), "%s", c->host);
  ft__config_domain_of(&c->cfg, c->host, mine.domain);
  MPI_Comm_rank(c->smp_comm, &mine.rank);
  relaunch_place(s->store.meta, &mine.stored_node, &mine.stored_nnodes);
  mine.stored_epoch = s->store.meta ? s->store.meta->epoch : 0;
  mine.pend_epoch = s->store.pend ? s->store.pend->epoch : 0;
  mine.stored_run = s->store.meta ? s->store.meta->run : 0;
  mine.new_run = new_run_id();
  mine.marked = s->store.marked;
  mine.empty = store_empty(s);
  int rc = ft__smp_allgather(s, &mine, all, sizeof(mine), "node discovery");
  if (rc == FT_OK)
    rc = ft__smp_settle_markers(s, all, mine.rank);
  if (rc == FT_OK)
    rc = check_stored(s, all);
  if (rc)
    return rc;
  qsort(all, (size_t)s->nnodes, sizeof(*all), cmp_node);
  *any = 0;
  for (int i = 0; i < s->nnodes; i++) {
    s->job.order[i] = all[i].rank;
    memcpy(s->job.hosts[i], all[i].host, FT_NAME_MAX);
    if (all[i].rank == mine.rank)
      s->node = i;
    *any |= all[i].domain[0] != '\0';
  }
  for (int i = 0; i < s->nnodes; i++)
    domains[i] = all[i].domain;
  return FT_OK;
}

int ft__smp_form_groups(smp_t *s) {
  MPI_Comm_size(s->c->smp_comm, &s->nnodes);
  node_id_t *all = NULL;
  const char **domains = NULL;
  int k = 1, m = 0, any = 0;
  int rc =
      ft__smp_agree_ok(s, alloc_startup(s, &all, &domains), "node discovery");
  if (rc == FT_OK)
    rc = order_nodes(s, all, domains, &any);
  if (rc == FT_OK)
    rc = ft__config_ec_for_nodes(&s->c->cfg, s->nnodes, &k, &m, s->msg,
                                 sizeof(s->msg));
  if (rc == FT_OK)
    rc = ft__groups_form(s->nnodes, any ? domains : NULL, k, m, &s->ec.groups,
                         s->msg, sizeof(s->msg));
  ft__free(all);
  ft__free(domains);
  /* Before the split: whether every SMP got this far (memory is local). */
  if ((rc = ft__smp_agree_ok(s, rc, "grouping")))
    return rc;
  s->ec.m = m;
  s->ec.group = s->ec.groups.group_of[s->node];
  s->ec.pos = s->ec.groups.pos_of[s->node];
  s->ec.gsize = s->ec.groups.size[s->ec.group];
  s->ec.k = s->ec.gsize - m;
  if (MPI_Comm_split(s->c->smp_comm, s->ec.group, s->ec.pos, &s->ec.gcomm) !=
      MPI_SUCCESS)
    return FT_EMPI;
  return FT_OK;
}

/* A relaunch must match the job that wrote the store. */
int ft__smp_check_relaunch(smp_t *s) {
  const ft__meta_t *m = s->store.meta;
  if (!m)
    return FT_OK;
  int node, nnodes;
  relaunch_place(m, &node, &nnodes);
  if (m->nlocal != (uint32_t)s->c->nlocal || nnodes != s->nnodes)
    return ft__msgf(FT_EMISMATCH, s->msg, sizeof(s->msg),
                    "%s/meta: the store was written by a job of %d node(s) x "
                    "%u trainer(s); this launch has %d x %d (use the same "
                    "--nodes/--ppn, or run ft-restore --mode shrink first)",
                    s->c->dir.path, nnodes, m->nlocal, s->nnodes, s->c->nlocal);
  return FT_OK;
}
