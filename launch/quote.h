/*
 * A word quoted as bash 5's `printf %q` quotes it, so that ft-launch's
 * --dry-run and --verbose print the command line byte for byte as the bash
 * ft-launch did, and a shell reads each word back as it was:
 *   ""                      ''
 *   a character the locale cannot print (a control character, a byte that
 *   is no character)        $'...' with \n, \t, \E ... and \NNN octal
 *   anything else           a backslash before each of  space ! " $ & '
 *                           ( ) * , ; < > ? [ \ ] ^ ` { | }, before a
 *                           leading #, and before a ~ that leads or
 *                           follows : or =
 * "Cannot print" is the C library's in the LC_CTYPE locale (iswprint), as
 * in bash; the caller sets the locale (setlocale) as bash would.
 */
#ifndef FT_LAUNCH_QUOTE_H
#define FT_LAUNCH_QUOTE_H

#include "launch/words.h"

/* word, quoted, appended to out.  FT_OK or FT_ENOMEM. */
int ft__quote_word(ft__text_t *out, const char *word);

/* A file name as coreutils quotes it in its messages (mkdir, mktemp):
 * between U+2018 and U+2019 in a UTF-8 locale, between two ' in any
 * other.  A name with a quote or a character that cannot be printed is not
 * escaped as coreutils would escape it. */
int ft__quote_coreutils(ft__text_t *out, const char *name);

#endif
