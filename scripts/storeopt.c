/* The store-locating options shared by the tools (storeopt.h). */
#include "scripts/storeopt.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"

int ft__storeopt(int o, const char *arg, const char *prog, ft__config_t *cfg,
                 int *vnode) {
  char *end;
  switch (o) {
  case 'j':
    if (!ft__valid_job(arg))
      return fprintf(stderr, "%s: bad job name '%s'\n", prog, arg), 2;
    snprintf(cfg->job, sizeof(cfg->job), "%s", arg);
    return 0;
  case 's':
    snprintf(cfg->store_root, sizeof(cfg->store_root), "%s", arg);
    return 0;
  case 'v':
    *vnode = (int)strtol(arg, &end, 10);
    if (*end || !*arg || *vnode < 0)
      return fprintf(stderr, "%s: --vnode %s: expected N >= 0\n", prog, arg),
             2;
    return 0;
  default:
    return 1;
  }
}

int ft__storeopt_open(const ft__config_t *cfg, int vnode, ft__dir_t *d,
                      char *msg, size_t msglen) {
  char dir[FT_PATH_MAX];
  ft__dir_init(d, "");
  int rc = ft__store_dir(cfg->store_root, cfg->job, vnode, dir, sizeof(dir));
  if (rc)
    return ft__msgf(rc, msg, msglen, "%s: store path too long",
                    cfg->store_root);
  return ft__store_open_dir(cfg->store_root, dir, 0, d, msg, msglen);
}
