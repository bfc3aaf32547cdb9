/* kernelcast: XGBoost tree ensembles walked in C (predictors/compiled.py builds and loads this file).
 *
 * The semantics of predictors/trees.py (XGBoost's CPU predictor): a split sends value >= threshold
 * right, a missing value (NaN) goes its node's default way; a leaf's children are itself; each tree adds
 * its leaf to one output column, each column starts from its base score. Rows go in blocks and every row
 * of a block steps down a tree one level at a time without branching, so the loads of a block's rows
 * overlap and no mispredicted branch stalls the walk (as trees.Forest does in numpy). */
#include <stdint.h>

typedef struct {
    int32_t feature;       /* input column a split reads (leaves: 0) */
    float threshold;       /* go right when value >= threshold (leaves: +inf) */
    int32_t child[2];      /* left, right (a leaf: itself twice) */
    float leaf;            /* a leaf's value */
    int32_t default_right; /* where a missing value goes (leaves: 0) */
} kc_node;

#define KC_BLOCK 64
/* blocks of fewer rows than this walk KC_GROUP trees side by side instead: one row alone has no other row's loads
 * to overlap with its own chain of dependent loads down a tree, so it overlaps the chains of several trees */
#define KC_FEW_ROWS 4
#define KC_GROUP 16

static void kc_walk_grouped(const float *xr, int64_t col_stride, const kc_node *nodes, const int64_t *roots,
                            const int32_t *depths, const int32_t *outputs, int64_t n_trees, double *o) {
    int64_t at[KC_GROUP];
    for (int64_t t0 = 0; t0 < n_trees; t0 += KC_GROUP) {
        const int64_t g = t0 + KC_GROUP < n_trees ? KC_GROUP : n_trees - t0;
        int32_t deepest = 0;
        for (int64_t j = 0; j < g; ++j) {
            at[j] = roots[t0 + j];
            if (depths[t0 + j] > deepest) deepest = depths[t0 + j];
        }
        /* a leaf steps to itself: the walk ends when no tree of the group moved (trees gated off a row by
         * Forest.from_boosters(own=...) end on their 0 leaf after one level) */
        for (int32_t level = 0, moved = 1; level < deepest && moved; ++level) {
            moved = 0;
            for (int64_t j = 0; j < g; ++j) {
                const kc_node *node = nodes + at[j];
                const float v = xr[node->feature * col_stride];
                const int right = (v >= node->threshold) | ((v != v) & node->default_right);
                const int64_t next = node->child[right];
                moved |= next != at[j];
                at[j] = next;
            }
        }
        for (int64_t j = 0; j < g; ++j) o[outputs[t0 + j]] += (double)nodes[at[j]].leaf;
    }
}

/* x[r * row_stride + f * col_stride] is row r's feature f (strides in elements: C or Fortran order alike) */
void kc_forest_predict(const float *x, int64_t rows, int64_t row_stride, int64_t col_stride, const kc_node *nodes,
                       const int64_t *roots, const int32_t *depths, const int32_t *outputs, int64_t n_trees,
                       int64_t n_outputs, const double *base, double *out) {
    int64_t at[KC_BLOCK];
    for (int64_t r0 = 0; r0 < rows; r0 += KC_BLOCK) {
        const int64_t n = r0 + KC_BLOCK < rows ? KC_BLOCK : rows - r0;
        const float *xb = x + r0 * row_stride;
        double *ob = out + r0 * n_outputs;
        for (int64_t r = 0; r < n; ++r)
            for (int64_t o = 0; o < n_outputs; ++o) ob[r * n_outputs + o] = 0.0;
        if (n < KC_FEW_ROWS) {
            for (int64_t r = 0; r < n; ++r)
                kc_walk_grouped(xb + r * row_stride, col_stride, nodes, roots, depths, outputs, n_trees,
                                ob + r * n_outputs);
            for (int64_t r = 0; r < n; ++r)
                for (int64_t o = 0; o < n_outputs; ++o) ob[r * n_outputs + o] += base[o];
            continue;
        }
        for (int64_t t = 0; t < n_trees; ++t) {
            for (int64_t r = 0; r < n; ++r) at[r] = roots[t];
            for (int32_t level = 0, moved = 1; level < depths[t] && moved; ++level) {
                moved = 0;
                for (int64_t r = 0; r < n; ++r) {
                    const kc_node *node = nodes + at[r];
                    const float v = xb[r * row_stride + node->feature * col_stride];
                    const int right = (v >= node->threshold) | ((v != v) & node->default_right);
                    const int64_t next = node->child[right];
                    moved |= next != at[r];
                    at[r] = next;
                }
            }
            const int64_t o = outputs[t];
            for (int64_t r = 0; r < n; ++r) ob[r * n_outputs + o] += (double)nodes[at[r]].leaf;
        }
        for (int64_t r = 0; r < n; ++r)
            for (int64_t o = 0; o < n_outputs; ++o) ob[r * n_outputs + o] += base[o];
    }
}
