/* The demo's log: the server's messages to stderr, or to the file Triton's logging extension
 * names (POST /v2/logging {"log_file": ...}, gRPC LogSettings), with an ISO 8601 timestamp when
 * log_format says so — what a host does with isv_options_set_log_settings_cb. The library
 * decides which levels come here (log_info, log_warning, log_error). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include <inferserve.h>

#include "zoo.h"

static uv_mutex_t mu; /* the server's log may be called from worker threads */
static FILE *sink;    /* NULL: stderr */
static int iso8601;

static void demo_log(void *user, isv_log_level level, const char *message) {
  (void)user;
  static const char *const names[] = {"", "ERROR", "WARN", "INFO"};
  char stamp[40] = "";
  uv_mutex_lock(&mu);
  if (iso8601) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ ", &tm);
  }
  FILE *f = sink ? sink : stderr;
  fprintf(f, "%sinferserve-demo: %s %s\n", stamp, names[level >= 1 && level <= 3 ? level : 0],
          message);
  fflush(f);
  uv_mutex_unlock(&mu);
}

static void demo_log_settings(void *user, const isv_log_settings *s) {
  (void)user;
  uv_mutex_lock(&mu);
  if (sink) fclose(sink);
  sink = NULL;
  if (s->file[0] && (sink = fopen(s->file, "a")) == NULL)
    fprintf(stderr, "inferserve-demo: cannot open log file '%s': the log stays on stderr\n",
            s->file);
  iso8601 = strcmp(s->format, "ISO8601") == 0;
  uv_mutex_unlock(&mu);
}

int demo_logging_setup(isv_options *opts) {
  if (uv_mutex_init(&mu) != 0) return -1;
  if (isv_options_set_log(opts, demo_log, NULL) != 0) return -1;
  return isv_options_set_log_settings_cb(opts, demo_log_settings, NULL);
}
