/* The main() of every unit test program (check_main.h).  The test file's
 * unit_suite() builds the suite first, so that whatever it must do before
 * any test (build a reference table, probe a device, start MPI) is done
 * before the runner exists; then the tests' root directory is made where
 * the program asked for one, the suite runs, and the root is removed:
 * a test that fails in its own process exits it without running its
 * teardown, so only main can be sure to clean up. */
#include <check.h>
#include <stdlib.h>

#include "tests/unit/check_main.h"
#include "tests/unit/tmpdir.h"

int main(int argc, char **argv) {
  unit_prog_t prog = {.argc = &argc, .argv = &argv};
  Suite *s = unit_suite(&prog);
  if (!s)
    return prog.status;
  SRunner *sr = srunner_create(s);
  if (prog.tmpdir && tmpdir_make_root(prog.tmpdir) != 0) {
    srunner_free(sr);
    return EXIT_FAILURE;
  }
  srunner_set_fork_status(sr, prog.fork);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (prog.tmpdir)
    tmpdir_remove_root();
  if (prog.done)
    prog.done();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
