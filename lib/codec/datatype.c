/* See datatype.h. The public isv_datatype_* functions are this table too. */
#include "datatype.h"

#include <string.h>

typedef struct dt_row { /* the sizes: datatype.h's isv__dt_size, inline */
  const char *name[ISV__DTN_COUNT];
  int grps_number;
  int triton_number;
  int tf_number;
} dt_row;

static const dt_row rows[] = {
    [ISV_TYPE_INVALID] = {{NULL, NULL, NULL, NULL}, 0, 0, 0},
#define ISV__DT_ROW(e, size, v2, tf, grps, grps_n, triton, triton_n, tf_n) \
  [ISV_##e] = {{v2, tf, grps, triton}, grps_n, triton_n, tf_n},
    ISV__DATATYPES(ISV__DT_ROW)
#undef ISV__DT_ROW
};

#define N_ROWS (sizeof rows / sizeof rows[0])

const char *isv__dt_name(isv_datatype dt, isv__dt_naming naming) {
  if ((unsigned)dt >= N_ROWS || (unsigned)naming >= ISV__DTN_COUNT) return NULL;
  return rows[dt].name[naming];
}

isv_datatype isv__dt_from_name(isv__dt_naming naming, const char *name, size_t len) {
  if (name == NULL || len == 0 || (unsigned)naming >= ISV__DTN_COUNT) return ISV_TYPE_INVALID;
  for (size_t i = 1; i < N_ROWS; i++) {
    const char *n = rows[i].name[naming];
    /* the first byte first: most rows differ there, and are passed without a strlen */
    if (n && n[0] == name[0] && strlen(n) == len && memcmp(n, name, len) == 0)
      return (isv_datatype)i;
  }
  return ISV_TYPE_INVALID;
}

int isv__dt_grps_number(isv_datatype dt) { return (unsigned)dt < N_ROWS ? rows[dt].grps_number : 0; }

isv_datatype isv__dt_from_grps_number(int n) {
  for (size_t i = 1; n > 0 && i < N_ROWS; i++)
    if (rows[i].grps_number == n) return (isv_datatype)i;
  return ISV_TYPE_INVALID;
}

int isv__dt_triton_number(isv_datatype dt) {
  return (unsigned)dt < N_ROWS ? rows[dt].triton_number : 0;
}

int isv__dt_tf_number(isv_datatype dt) { return (unsigned)dt < N_ROWS ? rows[dt].tf_number : 0; }

isv_datatype isv__dt_from_tf_number(int n) {
  for (size_t i = 1; n > 0 && i < N_ROWS; i++)
    if (rows[i].tf_number == n) return (isv_datatype)i;
  return ISV_TYPE_INVALID;
}

ISV_EXTERN size_t isv_datatype_size(isv_datatype dt) { return isv__dt_size(dt); }

ISV_EXTERN const char *isv_datatype_name(isv_datatype dt) { return isv__dt_name(dt, ISV__DTN_V2); }

ISV_EXTERN isv_datatype isv_datatype_from_name(const char *name, size_t len) {
  return isv__dt_from_name(ISV__DTN_V2, name, len);
}
