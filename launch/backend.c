/*
 * What launch/backend.h shares among the launchers: the table of them,
 * ftrt's variables of a launch, the MCA parameters of --mpirun-arg, and
 * the agent list of Open MPI and PRRTE, "A : B" split at each ':' as a
 * shell's `read` splits it (a last ':' ends the list, it opens no empty
 * entry).
 */
#include "launch/backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ftrt.h"

static const ft__launcher_t *const LAUNCHERS[] = {
    &ft__launcher_ompi4, &ft__launcher_ompi5, &ft__launcher_mpich};
const char ft__launcher_names[] = "ompi4, ompi5, mpich";

const ft__launcher_t *ft__launcher_find(const char *name) {
  for (size_t i = 0; i < sizeof(LAUNCHERS) / sizeof(*LAUNCHERS); i++)
    if (strcmp(LAUNCHERS[i]->name, name) == 0)
      return LAUNCHERS[i];
  return NULL;
}

int ft__launch_job_env(const ft__launch_job_t *job, ft__env_t *env) {
  int rc = FT_OK;
  if (job->ec_k && job->ec_m) {
    rc = ft__env_set(env, "FT_EC_K", job->ec_k);
    if (rc == FT_OK)
      rc = ft__env_set(env, "FT_EC_M", job->ec_m);
  }
  if (rc == FT_OK)
    rc = ft__env_set(env, "FT_JOB", job->job);
  if (rc == FT_OK)
    rc = ft__env_set(env, "FT_TIMEOUT", job->timeout);
  if (rc == FT_OK && job->nhosts == 0 && job->nodes > 1) {
    char v[32];
    snprintf(v, sizeof(v), "%" PRId64, job->node_ranks);
    rc = ft__env_set(env, "FT_VIRTUAL_NODE_RANKS", v);
  }
  return rc;
}

static int mca_word(const char *w) {
  static const char *const spellings[] = {"--mca", "-mca",      "--gmca",
                                          "-gmca", "--prtemca", "-prtemca"};
  for (size_t i = 0; i < sizeof(spellings) / sizeof(*spellings); i++)
    if (strcmp(w, spellings[i]) == 0)
      return 1;
  return 0;
}

int ft__launch_mca_value(const char *const *extra, int nextra, const char *name,
                         const char **value) {
  int found = 0;
  for (int i = 0; i + 2 < nextra; i++)
    if (mca_word(extra[i]) && strcmp(extra[i + 1], name) == 0) {
      *value = extra[i + 2];
      found = 1;
    }
  return found;
}

int ft__launch_mca_given(const char *const *extra, int nextra,
                         const char *name) {
  const char *v;
  return ft__launch_mca_value(extra, nextra, name, &v);
}

/* `IFS=: read -ra entries <<<"$list"`: the entries, blanks kept. */
static int agent_entries(const char *list, ft__words_t *entries) {
  size_t end = strcspn(list, "\n");
  for (size_t i = 0; i < end;) {
    size_t len = strcspn(list + i, ":\n");
    if (ft__words_addn(entries, list + i, len) != FT_OK)
      return FT_ENOMEM;
    i += len + 1;
  }
  return FT_OK;
}

int ft__launcher_pick_agent(const char *list, const ft__env_t *env,
                            ft__words_t *words) {
  ft__words_t entries = FT__WORDS_INIT;
  ft__text_t found = FT__TEXT_INIT;
  int rc = agent_entries(list, &entries);
  ft__words_truncate(words, 0);
  for (int i = 0; rc == FT_OK && i < entries.n; i++) {
    rc = ft__words_split(words, entries.v[i]);
    if (rc != FT_OK || words->n == 0)
      continue;
    int on_path = ft__env_command(env, words->v[0], &found);
    if (on_path != 0) {
      rc = on_path < 0 ? on_path : FT_OK;
      goto out;
    }
    ft__words_truncate(words, 0);
  }
  if (rc == FT_OK)
    rc = ft__words_split(words,
                         entries.n && *entries.v[0] ? entries.v[0] : "ssh");
out:
  ft__words_free(&entries);
  ft__text_free(&found);
  return rc;
}

int ft__launcher_probe_cmd(const char *const *probe, int nprobe,
                           const char *host, ft__words_t *argv) {
  if (ft__words_addv(argv, probe, nprobe) != FT_OK ||
      ft__words_add(argv, host) != FT_OK || ft__words_add(argv, "true") != FT_OK)
    return FT_ENOMEM;
  return FT_OK;
}

/* The cluster's hosts through its agent (ft-rsh); ssh and rsh hand the
 * line to the remote shell; srun runs words, so a shell is named. */
int ft__launcher_host_cmd(const ft__launch_job_t *j, const char *const *probe,
                          int nprobe, const char *host, const char *line,
                          ft__words_t *argv) {
  int rc = j->cluster ? ft__words_add(argv, j->rsh)
                      : ft__words_addv(argv, probe, nprobe);
  if (rc == FT_OK)
    rc = ft__words_add(argv, host);
  if (rc == FT_OK && !j->cluster && ft__launcher_is_srun(probe, nprobe) &&
      (ft__words_add(argv, "sh") != FT_OK || ft__words_add(argv, "-c") != FT_OK))
    rc = FT_ENOMEM;
  if (rc == FT_OK)
    rc = ft__words_add(argv, line);
  return rc == FT_OK ? FT_OK : FT_ENOMEM;
}

int ft__launcher_is_srun(const char *const *words, int n) {
  if (n <= 0 || !words[0])
    return 0;
  const char *base = strrchr(words[0], '/');
  return strcmp(base ? base + 1 : words[0], "srun") == 0;
}

/* The entry of opts that word names (-NAME, --NAME, or either with
 * =VALUE: *inline set), or NULL. */
static const ft__launch_ctx_opt_t *ctx_opt(const char *word,
                                           const ft__launch_ctx_opt_t *opts,
                                           int *inline_value) {
  if (word[0] != '-')
    return NULL;
  const char *name = word + (word[1] == '-' ? 1 : 0);
  for (const ft__launch_ctx_opt_t *o = opts; o->name; o++) {
    size_t len = strlen(o->name);
    if (strncmp(name, o->name, len) == 0 &&
        (name[len] == '\0' || (name[len] == '=' && o->nargs > 0))) {
      *inline_value = name[len] == '=';
      return o;
    }
  }
  return NULL;
}

/* The words extra[i] and the values it takes: 1 + nargs for an app
 * context's own option of opts written apart from its value, else 1; *o
 * set to its entry, or NULL. */
static int ctx_words(const char *const *extra, int i,
                     const ft__launch_ctx_opt_t *opts,
                     const ft__launch_ctx_opt_t **o) {
  int inline_value = 0;
  *o = opts ? ctx_opt(extra[i], opts, &inline_value) : NULL;
  return *o ? 1 + (inline_value ? 0 : (*o)->nargs) : 1;
}

int ft__launch_ctx_opt_short(const char *const *extra, int nextra,
                             const ft__launch_ctx_opt_t *opts, int *nargs) {
  for (int i = 0; i < nextra;) {
    const ft__launch_ctx_opt_t *o;
    int n = ctx_words(extra, i, opts, &o);
    if (i + n > nextra) {
      *nargs = o->nargs;
      return i;
    }
    i += n;
  }
  return -1;
}

/* The --mpirun-arg words parted: each app context's own options of opts
 * (an option with its nargs words, or written NAME=VALUE) appended to
 * local, every other word to global, each in the order given.  An option
 * short of its words (refused when planned: ft__launch_ctx_opt_short) is
 * given what there is. */
static int part_extra(const char *const *extra, int nextra,
                      const ft__launch_ctx_opt_t *opts, ft__words_t *global,
                      ft__words_t *local) {
  for (int i = 0; i < nextra; i++) {
    const ft__launch_ctx_opt_t *o;
    int n = ctx_words(extra, i, opts, &o);
    if (i + n > nextra)
      n = nextra - i;
    if (ft__words_addv(o ? local : global, extra + i, n) != FT_OK)
      return FT_ENOMEM;
    i += n - 1;
  }
  return FT_OK;
}

/* One app context: COUNT N [HOST_OPT HOST] LOCAL... WORDS... */
static int app(const char *count, int64_t n, const char *host_opt,
               const char *host, const ft__words_t *local,
               const char *const *words, int nwords, ft__words_t *w) {
  if (ft__words_add(w, count) != FT_OK ||
      ft__words_addf(w, "%" PRId64, n) != FT_OK ||
      (host && (ft__words_add(w, host_opt) != FT_OK ||
                ft__words_add(w, host) != FT_OK)) ||
      ft__words_addv(w, (const char *const *)local->v, local->n) != FT_OK)
    return FT_ENOMEM;
  return ft__words_addv(w, words, nwords);
}

static int apps(const ft__launch_job_t *j, const char *count,
                const char *host_opt, const ft__words_t *local,
                ft__words_t *w) {
  const char *smp[] = {j->smp};
  for (int64_t node = 0; node < j->nodes; node++) {
    const char *host = j->nhosts > 0 ? j->hosts[node] : NULL;
    if ((node > 0 && ft__words_add(w, ":") != FT_OK) ||
        app(count, 1, host_opt, host, local, smp, 1, w) != FT_OK ||
        ft__words_add(w, ":") != FT_OK ||
        app(count, j->ranks_per_node - 1, host_opt, host, local, j->program,
            j->nprogram, w) != FT_OK)
      return FT_ENOMEM;
  }
  return FT_OK;
}

int ft__launch_mpmd(const ft__launch_job_t *j,
                    const ft__launch_ctx_opt_t *opts, const char *count,
                    const char *host_opt, ft__words_t *local,
                    ft__words_t *w) {
  ft__words_t global = FT__WORDS_INIT;
  int rc = part_extra(j->extra, j->nextra, opts, &global, local);
  if (rc == FT_OK)
    rc = ft__words_addv(w, (const char *const *)global.v, global.n);
  if (rc == FT_OK)
    rc = apps(j, count, host_opt, local, w);
  ft__words_free(&global);
  ft__words_free(local);
  return rc;
}
