/* kernelcast: XGBoost tree ensembles walked in C (predictors/compiled.py builds and loads this file).
 *
 * The semantics of predictors/trees.py (XGBoost's CPU predictor): a split sends value >= threshold
 * right, a missing value (NaN) goes its node's default way; a leaf's children are itself; each tree adds
 * its leaf to one output column, each column starts from its base score. Rows go in blocks and every row
 * of a block steps down a tree one level at a time without branching, so the loads of a block's rows
 * overlap and no mispredicted branch stalls the walk (as trees.Forest does in numpy).
 *
 * Runs: consecutive trees whose roots make the same split and send one side straight to a 0 leaf (the gates
 * Forest.from_boosters(own=...) puts on per-backend trees) form a run. A block whose rows all take the 0 side skips
 * the run; a block whose rows all take the other side starts every tree of the run one level down. */
#include <stdint.h>

/* 8 bytes, eight to a cache line; compiled.py numbers each tree's nodes breadth first within the tree's own index
 * range, so a split's right child is the node after its left one */
typedef struct {
    float value;      /* a split's threshold (go right when value >= it); a leaf's value */
    uint16_t feature; /* input column a split reads (bits 0-13); bit 14 marks a leaf, bit 15 a missing value going right */
    uint16_t left;    /* the left child's index from the tree's root (a leaf: its own, so it stays) */
} kc_node;

#define KC_FEATURE(node) ((node)->feature & 0x3fffu)
#define KC_LEAF 0x4000u

/* rows a block walks side by side: its feature rows (98 floats each for GEMM) and the tree in hand stay in L2, so a
 * tree's nodes come from memory once per block */
#define KC_BLOCK 256
/* blocks of fewer rows than this walk KC_GROUP trees side by side instead: one row alone has no other row's loads
 * to overlap with its own chain of dependent loads down a tree, so it overlaps the chains of several trees */
#define KC_FEW_ROWS 4
#define KC_GROUP 64

/* the node a walk steps to is asked for as soon as it is known: the other trees (rows) of the group (block) step
 * while it comes from memory. A hint only: the walk and its sums are the same without it (measured on GEMM's forest:
 * one row 48 -> 37 µs, 40,000-row batches 1.35x the rows/s) */
#if defined(__GNUC__) || defined(__clang__)
#define KC_PREFETCH(p) __builtin_prefetch(p)
#else
#define KC_PREFETCH(p) ((void)0)
#endif

static inline int kc_right(const kc_node *node, float v) {
    return ((v >= node->value) | ((v != v) & (int)(node->feature >> 15))) & !(node->feature & KC_LEAF);
}

/* the index (from the tree's root) a node at `at` steps to */
static inline int64_t kc_step(const kc_node *node, float v) { return (int64_t)node->left + kc_right(node, v); }

/* where the rows xr[r * row_stride] (r < n) go at a run's root: 0 all to the 0 leaf (skip the run), 1 all to the
 * other side (start one level down), -1 both ways (walk from the root) */
static int kc_run_side(const float *x, int64_t n, int64_t row_stride, int64_t col_stride, const kc_node *root,
                       int zero_side) {
    int64_t to_zero = 0;
    for (int64_t r = 0; r < n; ++r) to_zero += kc_right(root, x[r * row_stride + KC_FEATURE(root) * col_stride]) == zero_side;
    return to_zero == n ? 0 : to_zero == 0 ? 1 : -1;
}

static void kc_walk_grouped(const float *xr, int64_t col_stride, const kc_node *nodes, const int64_t *roots,
                            const int32_t *depths, const int32_t *outputs, const int32_t *zero_side,
                            const int64_t *run_end, int64_t n_trees, double *o) {
    int64_t at[KC_GROUP];
    const kc_node *tree[KC_GROUP];
    int64_t t = 0;
    while (t < n_trees) {
        int64_t stop = n_trees, skip_root = 0;
        if (zero_side[t] >= 0) {
            const int side = kc_run_side(xr, 1, 0, col_stride, nodes + roots[t], zero_side[t]);
            if (side == 0) {
                t = run_end[t];
                continue;
            }
            stop = run_end[t];
            skip_root = 1;
        } else {
            for (stop = t; stop < n_trees && zero_side[stop] < 0; ++stop) {}
        }
        for (int64_t t0 = t; t0 < stop; t0 += KC_GROUP) {
            const int64_t g = t0 + KC_GROUP < stop ? KC_GROUP : stop - t0;
            int32_t deepest = 0;
            for (int64_t j = 0; j < g; ++j) {
                tree[j] = nodes + roots[t0 + j];
                at[j] = skip_root ? tree[j]->left + !zero_side[t0 + j] : 0;
                if (depths[t0 + j] > deepest) deepest = depths[t0 + j];
            }
            /* a leaf steps to itself: the walk ends when no tree of the group moved */
            for (int32_t level = (int32_t)skip_root, moved = 1; level < deepest && moved; ++level) {
                moved = 0;
                for (int64_t j = 0; j < g; ++j) {
                    const kc_node *node = tree[j] + at[j];
                    const int64_t next = kc_step(node, xr[KC_FEATURE(node) * col_stride]);
                    KC_PREFETCH(tree[j] + next);
                    moved |= next != at[j];
                    at[j] = next;
                }
            }
            for (int64_t j = 0; j < g; ++j) o[outputs[t0 + j]] += (double)tree[j][at[j]].value;
        }
        t = stop;
    }
}

/* x[r * row_stride + f * col_stride] is row r's feature f (strides in elements: C or Fortran order alike).
 * zero_side[t]: which child of tree t's root is a 0 leaf (0 left, 1 right) where t is in a run, else -1;
 * run_end[t]: the first tree after t's run. */
void kc_forest_predict(const float *x, int64_t rows, int64_t row_stride, int64_t col_stride, const kc_node *nodes,
                       const int64_t *roots, const int32_t *depths, const int32_t *outputs, const int32_t *zero_side,
                       const int64_t *run_end, int64_t n_trees, int64_t n_outputs, const double *base, double *out) {
    int64_t at[KC_BLOCK];
    for (int64_t r0 = 0; r0 < rows; r0 += KC_BLOCK) {
        const int64_t n = r0 + KC_BLOCK < rows ? KC_BLOCK : rows - r0;
        const float *xb = x + r0 * row_stride;
        double *ob = out + r0 * n_outputs;
        for (int64_t r = 0; r < n; ++r)
            for (int64_t o = 0; o < n_outputs; ++o) ob[r * n_outputs + o] = 0.0;
        if (n < KC_FEW_ROWS) {
            for (int64_t r = 0; r < n; ++r)
                kc_walk_grouped(xb + r * row_stride, col_stride, nodes, roots, depths, outputs, zero_side, run_end,
                                n_trees, ob + r * n_outputs);
        } else {
            int64_t t = 0, run_stop = 0;
            int run_side = -1;
            while (t < n_trees) {
                if (zero_side[t] >= 0 && t >= run_stop) { /* a run starts: one decision for its trees */
                    run_side = kc_run_side(xb, n, row_stride, col_stride, nodes + roots[t], zero_side[t]);
                    run_stop = run_end[t];
                    if (run_side == 0) {
                        t = run_stop;
                        continue;
                    }
                }
                const int skip_root = zero_side[t] >= 0 && run_side == 1;
                const kc_node *tree = nodes + roots[t];
                const int64_t start = skip_root ? tree->left + !zero_side[t] : 0;
                for (int64_t r = 0; r < n; ++r) at[r] = start;
                for (int32_t level = skip_root, moved = 1; level < depths[t] && moved; ++level) {
                    moved = 0;
                    for (int64_t r = 0; r < n; ++r) {
                        const kc_node *node = tree + at[r];
                        const int64_t next = kc_step(node, xb[r * row_stride + KC_FEATURE(node) * col_stride]);
                        KC_PREFETCH(tree + next);
                        moved |= next != at[r];
                        at[r] = next;
                    }
                }
                const int64_t o = outputs[t];
                for (int64_t r = 0; r < n; ++r) ob[r * n_outputs + o] += (double)tree[at[r]].value;
                ++t;
            }
        }
        for (int64_t r = 0; r < n; ++r)
            for (int64_t o = 0; o < n_outputs; ++o) ob[r * n_outputs + o] += base[o];
    }
}
