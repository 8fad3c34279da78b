#include "core/stats.h"

const double isv__lat_bounds[ISV__LAT_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                  0.01,   0.025,   0.05,   0.1,   0.5,    1.0};
const double isv__batch_bounds[ISV__BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128};

void isv__hist_add(isv__hist *h, const double *bounds, unsigned n_bounds, double v) {
  unsigned i = 0;
  while (i < n_bounds && v > bounds[i]) i++;
  h->counts[i]++;
  h->sum += v;
  h->count++;
}
