/* Re-slicing restore after ft-restore --mode shrink (runtime/reslice.c). */
#ifndef FT_RUNTIME_RESLICE_H
#define FT_RUNTIME_RESLICE_H

#include "runtime/ctx.h"

/* Collective over app_comm: fill every registered buffer from the old
 * ranks' data held by the nodes (own slot `own`, adopt<N>/ stores). */
int ft__reslice_restore(ft_ctx_t *c, ft__slot_t *own);

#endif
