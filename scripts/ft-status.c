/*
 * ft-status: what this node's store holds for a job, read straight from the
 * store files (no MPI, safe to run while the job runs or after it died):
 * held versions with their states, sizes and age, the SMP and its trainers
 * when a job is running, the SMP's binding and per-phase counters.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftrt.h"
#include "runtime/config.h"
#include "snapshot/ctl.h"
#include "scripts/storeopt.h"
#include "snapshot/store.h"

enum { EXIT_OK = 0, EXIT_NONE = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3 };

typedef struct view {
  ft__dir_t dir; /* the store, checked (storeopt.h) */
  const char *job;
  ft__meta_t *meta;
  int have_meta;
  char meta_err[512];
  ft__slot_t slot[FT_NSLOTS];
  int slot_rc[FT_NSLOTS];
  char slot_err[FT_NSLOTS][512];
  ft__ctl_t *ctl;
  int smp_alive;
} view_t;

static void usage(FILE *f) {
  fputs(
      "usage: ft-status [--job NAME] [--store DIR] [--vnode N] [--json]\n"
      "  --job NAME   job name (default: FT_JOB, else ftrt)\n"
      "  --store DIR  store root (default: FT_STORE_ROOT, else /dev/shm/...)\n"
      "  --vnode N    virtual node N (FT_VIRTUAL_NODE_RANKS layouts)\n"
      "  --json       one JSON object instead of the table\n"
      "  --help       this text\n"
      "See ft-status(1).\n",
      f);
}

static double age_s(uint64_t ns) {
  if (!ns)
    return -1;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (double)ns) * 1e-9;
}

static void load(view_t *v) {
  v->meta = calloc(1, sizeof(*v->meta));
  v->have_meta = v->meta && ft__meta_read(&v->dir, v->meta, v->meta_err,
                                          sizeof(v->meta_err)) == 0;
  for (int i = 0; i < FT_NSLOTS; i++)
    v->slot_rc[i] = ft__slot_open(&v->slot[i], &v->dir, i, v->job,
                                  v->slot_err[i], sizeof(v->slot_err[i]));
  char msg[256];
  if (ft__ctl_attach(&v->dir, &v->ctl, msg, sizeof(msg)) != 0)
    v->ctl = NULL;
  v->smp_alive = v->ctl && v->ctl->smp_pid &&
                 (kill((pid_t)v->ctl->smp_pid, 0) == 0 || errno == EPERM) &&
                 v->ctl->phase != FT_PHASE_DONE;
}

static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", *s);
    else
      putchar(*s);
  }
  putchar('"');
}

static void json_slot(const view_t *v, int i) {
  const ft__slot_t *s = &v->slot[i];
  printf("{\"slot\":%d,", i);
  if (v->slot_rc[i]) {
    printf("\"state\":\"%s\",\"error\":",
           v->slot_rc[i] == FT_ENOENT ? "MISSING" : "INVALID");
    json_str(v->slot_err[i]);
    printf("}");
    return;
  }
  const ft__slot_hdr_t *h = s->hdr;
  printf("\"state\":\"%s\",\"version\":%llu,\"step\":%llu,\"epoch\":%llu,"
         "\"data_bytes\":%llu,\"parity_bytes\":%llu,\"chunk_bytes\":%llu,"
         "\"data_off\":%llu,\"parity_off\":%llu,\"k\":%u,\"m\":%u,"
         "\"age_s\":%.3f}",
         ft__slot_state_name(ft__slot_state(s)), (unsigned long long)h->version,
         (unsigned long long)h->step, (unsigned long long)h->epoch,
         (unsigned long long)h->data_bytes, (unsigned long long)h->parity_bytes,
         (unsigned long long)h->chunk_bytes, (unsigned long long)h->data_off,
         (unsigned long long)h->parity_off, h->k, h->m,
         age_s(h->committed_ns ? h->committed_ns : h->filled_ns));
}

static void json_stats(const ft__ctl_stats_t *st) {
  printf("\"stats\":{\"snapshots\":%llu,\"skipped\":%llu,\"bytes_sent\":%llu,"
         "\"bytes_recv\":%llu,\"bytes_protected\":%llu,\"cpu_s\":%.6f,"
         "\"total\":{\"crc_s\":%.6f,\"transfer_s\":%.6f,\"encode_s\":%.6f,"
         "\"commit_s\":%.6f},"
         "\"last\":{\"crc_s\":%.6f,\"transfer_s\":%.6f,\"encode_s\":%.6f,"
         "\"commit_s\":%.6f,\"bytes_sent\":%llu,\"bytes_recv\":%llu}}",
         (unsigned long long)st->snapshots, (unsigned long long)st->skipped,
         (unsigned long long)st->bytes_sent, (unsigned long long)st->bytes_recv,
         (unsigned long long)st->bytes_protected, st->cpu_s, st->t_crc,
         st->t_transfer, st->t_encode, st->t_commit, st->last_crc,
         st->last_transfer, st->last_encode, st->last_commit,
         (unsigned long long)st->last_bytes_sent,
         (unsigned long long)st->last_bytes_recv);
}

static void json_persist(const ft__ctl_persist_t *p) {
  printf(",\"persist\":{\"enabled\":%s,\"status\":\"%s\",\"flushing\":%llu,"
         "\"version\":%llu,\"step\":%llu,\"complete\":%llu,\"flushes\":%llu,"
         "\"abandoned\":%llu,\"failed\":%llu,\"bytes\":%llu,\"seconds\":%.6f,"
         "\"message\":",
         p->enabled ? "true" : "false", ft_err_name(p->status),
         (unsigned long long)p->flushing, (unsigned long long)p->version,
         (unsigned long long)p->step, (unsigned long long)p->complete,
         (unsigned long long)p->flushes, (unsigned long long)p->abandoned,
         (unsigned long long)p->failed, (unsigned long long)p->bytes,
         p->seconds);
  json_str(p->msg);
  printf("}");
}

static void json_ctl(const view_t *v) {
  const ft__ctl_t *c = v->ctl;
  printf(",\"smp\":{\"pid\":%u,\"running\":%s,\"phase\":\"%s\",\"node\":%u,"
         "\"nnodes\":%u,\"group\":%u,\"pos\":%u,\"k\":%u,\"m\":%u,"
         "\"committed_version\":%llu,\"committed_step\":%llu,\"binding\":",
         c->smp_pid, v->smp_alive ? "true" : "false",
         ft__phase_name(c->phase), c->node, c->nnodes, c->group, c->pos, c->k,
         c->m, (unsigned long long)c->committed_version,
         (unsigned long long)c->committed_step);
  json_str(c->binding);
  printf(",");
  json_stats(&c->stats);
  json_persist(&c->persist);
  printf(",\"trainers\":[");
  for (uint32_t i = 0; i < c->nlocal && i < FT_MAX_LOCAL; i++)
    printf("%s{\"rank\":%u,\"pid\":%u,\"written_version\":%llu,"
           "\"finalized\":%s}",
           i ? "," : "", c->rank[i].app_rank, c->rank[i].pid,
           (unsigned long long)c->rank[i].written_version,
           c->rank[i].finalized ? "true" : "false");
  printf("]}");
}

static void print_json(const view_t *v, const char *host) {
  printf("{\"job\":");
  json_str(v->job);
  printf(",\"host\":");
  json_str(host);
  printf(",\"store\":");
  json_str(v->dir.path);
  if (v->have_meta)
    printf(",\"meta\":{\"epoch\":%llu,\"node\":%u,\"nnodes\":%u,\"k\":%u,"
           "\"m\":%u,\"group\":%u,\"pos\":%u,\"trainers\":%u}",
           (unsigned long long)v->meta->epoch, v->meta->node, v->meta->nnodes,
           v->meta->k, v->meta->m, v->meta->group, v->meta->pos,
           v->meta->nlocal);
  printf(",\"slots\":[");
  for (int i = 0; i < FT_NSLOTS; i++) {
    printf(i ? "," : "");
    json_slot(v, i);
  }
  printf("]");
  if (v->ctl)
    json_ctl(v);
  printf("}\n");
}

static void human_size(char *out, size_t len, double b) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) {
    b /= 1024;
    i++;
  }
  snprintf(out, len, "%.1f %s", b, u[i]);
}

static void print_slots(const view_t *v) {
  printf("%-5s %-10s %8s %8s %11s %11s %9s\n", "slot", "state", "version",
         "step", "data", "parity", "age");
  for (int i = 0; i < FT_NSLOTS; i++) {
    if (v->slot_rc[i]) {
      printf("%-5d %-10s %s\n", i, v->slot_rc[i] == FT_ENOENT ? "-" : "INVALID",
             v->slot_rc[i] == FT_ENOENT ? "(none)" : v->slot_err[i]);
      continue;
    }
    const ft__slot_hdr_t *h = v->slot[i].hdr;
    char d[32], p[32];
    human_size(d, sizeof(d), (double)h->data_bytes);
    human_size(p, sizeof(p), (double)h->parity_bytes);
    printf("%-5d %-10s %8llu %8llu %11s %11s %8.1fs\n", i,
           ft__slot_state_name(ft__slot_state(&v->slot[i])),
           (unsigned long long)h->version, (unsigned long long)h->step, d, p,
           age_s(h->committed_ns ? h->committed_ns : h->filled_ns));
  }
}

static void print_ctl(const view_t *v) {
  const ft__ctl_t *c = v->ctl;
  const ft__ctl_stats_t *st = &c->stats;
  printf("SMP pid %u %s, phase %s, node %u of %u, group %u position %u "
         "(k=%u m=%u)\n",
         c->smp_pid, v->smp_alive ? "running" : "not running",
         ft__phase_name(c->phase), c->node, c->nnodes, c->group, c->pos, c->k,
         c->m);
  printf("binding: %s\n", c->binding[0] ? c->binding : "(not decided yet)");
  for (uint32_t i = 0; i < c->nlocal && i < FT_MAX_LOCAL; i++)
    printf("trainer rank %u pid %u wrote version %llu%s\n", c->rank[i].app_rank,
           c->rank[i].pid, (unsigned long long)c->rank[i].written_version,
           c->rank[i].finalized ? " (finalized)" : "");
  printf("snapshots %llu committed (%llu skipped), last: crc %.4f s, transfer "
         "%.4f s, encode %.4f s, commit %.4f s; sent %llu B, received %llu B, "
         "SMP CPU %.3f s\n",
         (unsigned long long)st->snapshots, (unsigned long long)st->skipped,
         st->last_crc, st->last_transfer, st->last_encode, st->last_commit,
         (unsigned long long)st->bytes_sent, (unsigned long long)st->bytes_recv,
         st->cpu_s);
  const ft__ctl_persist_t *p = &c->persist;
  if (!p->enabled)
    return;
  printf("disk tier: %llu flush(es) (%llu abandoned, %llu failed), last "
         "flushed version %llu (step %llu), %llu B in %.3f s; newest seen "
         "complete on disk: %llu%s",
         (unsigned long long)p->flushes, (unsigned long long)p->abandoned,
         (unsigned long long)p->failed, (unsigned long long)p->version,
         (unsigned long long)p->step, (unsigned long long)p->bytes, p->seconds,
         (unsigned long long)p->complete,
         p->flushing ? "; flushing now" : "");
  if (p->flushing)
    printf(" version %llu", (unsigned long long)p->flushing);
  printf("\n");
  if (p->msg[0])
    printf("disk tier: %s\n", p->msg);
}

static void print_table(const view_t *v, const char *host) {
  printf("job %s on %s, store %s\n", v->job, host, v->dir.path);
  if (v->have_meta)
    printf("layout epoch %llu: node %u of %u, group %u position %u, k=%u m=%u, "
           "%u trainer(s)\n",
           (unsigned long long)v->meta->epoch, v->meta->node, v->meta->nnodes,
           v->meta->group, v->meta->pos, v->meta->k, v->meta->m,
           v->meta->nlocal);
  else
    printf("metadata: %s\n", v->meta_err);
  print_slots(v);
  if (v->ctl)
    print_ctl(v);
}

int main(int argc, char **argv) {
  static const struct option opts[] = {FT_STOREOPT_OPTIONS,
                                       {"json", no_argument, 0, 'J'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  ft__config_t cfg;
  char msg[512];
  if (ft__config_load(&cfg, ft__config_env, NULL, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "ft-status: %s\n", msg);
    return 2;
  }
  int json = 0, vnode = -1, o, src;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if ((src = ft__storeopt(o, optarg, "ft-status", &cfg, &vnode)) != 1) {
      if (src)
        return src;
      continue;
    }
    switch (o) {
    case 'J':
      json = 1;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  view_t v = {.job = cfg.job};
  int rc = ft__storeopt_open(&cfg, vnode, &v.dir, msg, sizeof(msg));
  if (rc == FT_ECONFIG) {
    fprintf(stderr, "ft-status: refused: %s\n", msg);
    return EXIT_REFUSED;
  }
  if (rc != FT_OK && rc != FT_ENOENT) {
    fprintf(stderr, "ft-status: %s\n", msg);
    return EXIT_NONE;
  }
  char host[FT_NAME_MAX] = "?";
  gethostname(host, sizeof(host) - 1);
  load(&v);
  int found = v.have_meta || v.slot_rc[0] == 0 || v.slot_rc[1] == 0 || v.ctl;
  if (!found && !json) {
    fprintf(stderr, "ft-status: no store for job '%s' at %s\n", v.job,
            v.dir.path);
    return EXIT_NONE;
  }
  if (json)
    print_json(&v, host);
  else
    print_table(&v, host);
  ft__dir_close(&v.dir);
  return found ? EXIT_OK : EXIT_NONE;
}
