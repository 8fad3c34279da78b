/* Model warmup: the config's samples (the public isv_model_config_add_warmup*) and their runs
 * (core/warmup.h says how a run goes). */
#include "core/warmup.h"
#include "codec/datatype.h"

#include <stdio.h>
#include <string.h>

#include "codec/compiler.h"
#include "codec/half.h"
#include "codec/mem.h"
#include "core/group.h"
#include "core/request.h"
#include "core/scheduler.h"

#define MAX_DIMS 32 /* as a declared tensor's */

/* ---- the config's samples ------------------------------------------------------------------ */

static isv__warmup *find(const isv_model_config *c, const char *name) {
  for (size_t i = 0; i < c->n_warmups; i++)
    if (strcmp(c->warmups[i].name, name) == 0) return &c->warmups[i];
  return NULL;
}

static char *dup(const isv_mem *mem, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = isv__malloc(mem, n);
  if (d) memcpy(d, s, n);
  return d;
}

ISV_EXTERN int isv_model_config_add_warmup(isv_model_config *c, const char *sample,
                                           uint32_t batch_size, uint32_t count) {
  if (c == NULL || sample == NULL || sample[0] == '\0' || batch_size == 0) return ISV_EINVAL;
  if (find(c, sample)) return ISV_EEXIST;
  isv__warmup *v = isv__realloc(c->mem, c->warmups, (c->n_warmups + 1) * sizeof *v);
  if (v == NULL) return ISV_ENOMEM;
  c->warmups = v;
  isv__warmup *w = &v[c->n_warmups];
  memset(w, 0, sizeof *w);
  if ((w->name = dup(c->mem, sample)) == NULL) return ISV_ENOMEM;
  w->batch_size = batch_size;
  w->count = count;
  c->n_warmups++;
  return 0;
}

/* Elements of a row of dims (0 ok), or SIZE_MAX when a dimension is negative or it overflows. */
static size_t row_count(const int64_t *dims, size_t ndim) {
  size_t n = 1;
  for (size_t i = 0; i < ndim; i++) {
    if (dims[i] < 0 || (dims[i] && n > SIZE_MAX / 2 / (uint64_t)dims[i])) return SIZE_MAX;
    n *= (size_t)dims[i];
  }
  return n;
}

/* The elements of a raw BYTES buffer (u32 LE length + bytes each), or SIZE_MAX when it does
 * not parse to the end. */
static size_t raw_elements(const uint8_t *p, size_t n) {
  size_t k = 0, at = 0;
  while (at < n) {
    if (n - at < 4) return SIZE_MAX;
    uint32_t len = (uint32_t)p[at] | (uint32_t)p[at + 1] << 8 | (uint32_t)p[at + 2] << 16 |
                   (uint32_t)p[at + 3] << 24;
    at += 4;
    if (len > n - at) return SIZE_MAX;
    at += len;
    k++;
  }
  return k;
}

ISV_EXTERN int isv_model_config_add_warmup_input(isv_model_config *c, const char *sample,
                                                 const char *input, isv_datatype dt,
                                                 const int64_t *dims, size_t ndim,
                                                 isv_warmup_fill fill, const void *data,
                                                 size_t byte_size) {
  if (c == NULL || sample == NULL || input == NULL || input[0] == '\0') return ISV_EINVAL;
  isv__warmup *w = find(c, sample);
  if (w == NULL) return ISV_ENOTFOUND;
  for (size_t i = 0; i < w->n_inputs; i++)
    if (strcmp(w->inputs[i].name, input) == 0) return ISV_EEXIST;
  size_t el = isv__dt_size(dt);
  if (el == 0 || ndim > MAX_DIMS || (ndim && dims == NULL)) return ISV_EINVAL;
  size_t n = row_count(dims, ndim);
  if (n == SIZE_MAX) return ISV_EINVAL;
  switch (fill) {
  case ISV_WARMUP_ZERO:
  case ISV_WARMUP_RANDOM:
    if (data || byte_size) return ISV_EINVAL;
    break;
  case ISV_WARMUP_DATA:
    if (byte_size && data == NULL) return ISV_EINVAL;
    if (dt == ISV_BYTES ? raw_elements(data, byte_size) != n
                        : n > SIZE_MAX / el || byte_size != n * el)
      return ISV_EINVAL;
    break;
  default: return ISV_EINVAL;
  }
  isv__warmup_input *v = isv__realloc(c->mem, w->inputs, (w->n_inputs + 1) * sizeof *v);
  if (v == NULL) return ISV_ENOMEM;
  w->inputs = v;
  int rc = isv__warmup_input_set(c->mem, &v[w->n_inputs], input, dt, dims, ndim, fill, data,
                                 byte_size);
  if (rc == 0) w->n_inputs++;
  return rc;
}

/* ---- a run --------------------------------------------------------------------------------- */

/* One input of the sample being run, as its requests get it (shared by them: ISV_STATIC). */
typedef struct ready_input {
  const char *name;
  isv_datatype dt;
  int64_t shape[MAX_DIMS + 1];
  size_t ndim;
  void *data;      /* the whole tensor (BYTES: an isv_bytes array into the sample's bytes) */
  size_t byte_size;
} ready_input;

typedef struct wrun {
  isv__core *c;
  isv_model *m; /* a reference */
  size_t sample;
  uint32_t round;
  unsigned pending; /* requests of the round not yet done */
  int failed;
  int stepping, again; /* step() is running / must go round again (no recursion) */
  uint64_t rng;
  ready_input *in; /* the current sample's */
  size_t n_in;
  char why[512];
} wrun;

static uint64_t next_rand(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void random_row(uint64_t *rng, isv_datatype dt, void *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t x = next_rand(rng);
    double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
    switch (dt) {
    case ISV_BOOL: ((uint8_t *)out)[i] = (uint8_t)(x & 1); break;
    case ISV_FP32: ((float *)out)[i] = (float)u; break;
    case ISV_FP64: ((double *)out)[i] = u; break;
    case ISV_FP16: ((uint16_t *)out)[i] = isv__f32_to_f16((float)u); break;
    case ISV_BF16: ((uint16_t *)out)[i] = isv__f32_to_bf16((float)u); break;
    default: memcpy((char *)out + i * isv__dt_size(dt), &x, isv__dt_size(dt)); break;
    }
  }
}

static void free_inputs(wrun *w) {
  for (size_t i = 0; i < w->n_in; i++) isv__free(w->in[i].data);
  isv__free(w->in);
  w->in = NULL;
  w->n_in = 0;
}

/* The tensors of sample w->sample: each input's row, repeated batch_size times with a batch
 * dimension when the model batches. 0, or ISV_ENOMEM. */
static int prepare(wrun *w) {
  const isv_model_config *cfg = w->m->cfg;
  const isv__warmup *s = &cfg->warmups[w->sample];
  const isv_mem *mem = w->c->mem;
  free_inputs(w);
  if (s->n_inputs && (w->in = isv__calloc(mem, s->n_inputs, sizeof *w->in)) == NULL)
    return ISV_ENOMEM;
  w->n_in = s->n_inputs;
  size_t rows = cfg->max_batch ? s->batch_size : 1;
  for (size_t i = 0; i < s->n_inputs; i++) {
    const isv__warmup_input *in = &s->inputs[i];
    ready_input *t = &w->in[i];
    t->name = in->name;
    t->dt = in->dt;
    t->ndim = 0;
    if (cfg->max_batch) t->shape[t->ndim++] = (int64_t)rows;
    for (size_t k = 0; k < in->ndim; k++) t->shape[t->ndim++] = in->dims[k];
    size_t n = row_count(in->dims, in->ndim), el = isv__dt_size(in->dt);
    if (n > SIZE_MAX / el / rows) return ISV_ENOMEM;
    t->byte_size = n * el * rows;
    if ((t->data = isv__calloc(mem, t->byte_size ? t->byte_size : 1, 1)) == NULL)
      return ISV_ENOMEM;
    if (in->dt == ISV_BYTES) { /* zeros are empty elements; data points into the sample */
      if (in->fill == ISV_WARMUP_DATA) {
        isv_bytes *b = t->data;
        const uint8_t *p = in->data;
        for (size_t k = 0; k < n; k++) {
          uint32_t len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
          b[k] = (isv_bytes){(const char *)p + 4, len};
          p += 4 + (size_t)len;
        }
      }
    } else if (in->fill == ISV_WARMUP_DATA) {
      if (n) memcpy(t->data, in->data, n * el);
    } else if (in->fill == ISV_WARMUP_RANDOM) {
      random_row(&w->rng, in->dt, t->data, n);
    }
    for (size_t r = 1; r < rows; r++) /* the row repeated, as Triton duplicates it */
      memcpy((char *)t->data + r * n * el, t->data, n * el);
  }
  return 0;
}

static void step(wrun *w);

static void fail(wrun *w, const char *fmt, const char *detail) {
  if (w->failed) return;
  w->failed = 1;
  snprintf(w->why, sizeof w->why, fmt, w->m->cfg->warmups[w->sample].name, detail);
}

static void on_response(isv_request *r, int status, void *data) {
  (void)status;
  (void)data;
  isv_request_free(r); /* a decoupled model's responses: only its completion matters */
}

static void on_done(isv_request *r, int status, void *data) {
  wrun *w = data;
  if (status != 0)
    fail(w, "model warmup failed: sample '%s': %s",
         r->errmsg && r->errmsg[0] ? r->errmsg : isv_strerror(status));
  isv_request_free(r);
  if (--w->pending == 0) step(w);
}

/* One request of the current sample, submitted. */
static void submit_one(wrun *w) {
  isv__core *c = w->c;
  isv_model *m = w->m;
  isv_request *r = isv__request_new(c);
  if (r == NULL) {
    fail(w, "model warmup failed: sample '%s': %s", "out of memory");
    return;
  }
  r->model_name = m->cfg->name; /* the config outlives r: r holds a model reference */
  r->version = m->version;
  r->model = m;
  isv__model_ref(m);
  r->warmup = 1;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < w->n_in; i++) {
    const ready_input *t = &w->in[i];
    rc = isv_request_add_input(r, t->name, t->dt, t->shape, t->ndim, t->data,
                               t->dt == ISV_BYTES ? 0 : t->byte_size, ISV_STATIC);
  }
  if (rc == 0 && m->cfg->decoupled) rc = isv_request_set_response_cb(r, on_response, NULL);
  if (rc != 0) {
    fail(w, "model warmup failed: sample '%s': %s", isv_strerror(rc));
    isv_request_free(r);
    return;
  }
  w->pending++;
  isv__core_submit(c, r, on_done, w);
}

static void finish(wrun *w) {
  isv__core *c = w->c;
  isv_model *m = w->m;
  const char *name = m->cfg->name, *version = m->version;
  if (!m->removed && !c->closing && m->state == ISV_MODEL_LOADING) {
    if (w->failed) {
      isv__core_log(c, ISV_LOG_ERROR, "model '%s' version '%s': %s", name, version, w->why);
      isv__group_set_reason(c, m, w->why);
      isv__group_set_state(c, name, version, ISV_MODEL_UNAVAILABLE);
    } else { /* quietly: readiness says it */
      isv__group_set_state(c, name, version, ISV_MODEL_READY);
    }
  }
  free_inputs(w);
  isv__model_unref(m);
  isv__free(w);
}

/* Go on: the next round, the next sample, or the end. Re-entered from a done callback that
 * runs inside isv__core_submit (an inline backend): only notes it must go round again. */
static void step(wrun *w) {
  if (w->stepping) {
    w->again = 1;
    return;
  }
  w->stepping = 1;
  do {
    w->again = 0;
    if (w->pending) break; /* a round still runs */
    const isv_model_config *cfg = w->m->cfg;
    /* nothing more once it failed, the version went or was set by the host, or the server
     * closes (its drain waits for what is in flight: a new run would hold it) */
    if (w->failed || w->m->removed || w->m->state != ISV_MODEL_LOADING || w->c->closing) {
      w->stepping = 0;
      finish(w);
      return;
    }
    if (w->round >= (cfg->warmups[w->sample].count ? cfg->warmups[w->sample].count : 1)) {
      w->round = 0;
      w->sample++;
      free_inputs(w);
    }
    if (w->sample == cfg->n_warmups) {
      w->stepping = 0;
      finish(w);
      return;
    }
    if (w->round == 0 && w->in == NULL && prepare(w) != 0) {
      fail(w, "model warmup failed: sample '%s': %s", "out of memory");
      w->again = 1;
      continue;
    }
    w->round++;
    for (unsigned i = 0; i < cfg->instances && !w->failed; i++) submit_one(w);
    if (w->pending == 0) w->again = 1; /* nothing went out (each done already, or failed) */
  } while (w->again);
  w->stepping = 0;
}

void isv__warmup_start(isv__core *c, isv_model *m) {
  wrun *w = isv__calloc(c->mem, 1, sizeof *w);
  if (w == NULL) { /* the version cannot be warmed: it must not serve unwarmed */
    isv__core_log(c, ISV_LOG_ERROR, "model '%s' version '%s': model warmup failed: out of memory",
                  m->cfg->name, m->version);
    isv__group_set_reason(c, m, "model warmup failed: out of memory");
    isv__group_set_state(c, m->cfg->name, m->version, ISV_MODEL_UNAVAILABLE);
    return;
  }
  w->c = c;
  w->m = m;
  isv__model_ref(m);
  w->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)w;
  step(w);
}
