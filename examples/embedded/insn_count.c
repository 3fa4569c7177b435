/*
 * The project's QEMU instruction counter: a TCG plugin that counts the
 * guest instructions executed, optionally only those whose address lies in
 * [lo, hi), and prints "insns: N" when QEMU exits (to stderr, or to FILE).
 *
 *   cc -O2 -shared -fPIC -o insn_count.so insn_count.c
 *   qemu-system-arm -M mps2-an386 ... -plugin ./insn_count.so[,lo=A,hi=B][,out=FILE]
 *
 * Debian's QEMU (7.2) ships neither plugins nor <qemu-plugin.h>, so the
 * few declarations of QEMU's plugin API (version 1) used here are written
 * out below.  Counting is an inline add per translated instruction: QEMU
 * adds to the counter without calling back, so a count costs little time.
 * The boards used (mps2-an386) have one vCPU, so one counter is exact.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- QEMU plugin API, version 1 (the subset this plugin uses) ---- */
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
                                                enum qemu_plugin_op op, void *ptr,
                                                uint64_t imm);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;
/* ------------------------------------------------------------------ */

static uint64_t count;
static uint64_t lo;
static uint64_t hi = UINT64_MAX;
static char *out_path;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t i, n = qemu_plugin_tb_n_insns(tb);
    (void)id;
    for (i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        if (pc >= lo && pc < hi) {
            qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                       &count, 1);
        }
    }
}

static void report(qemu_plugin_id_t id, void *userdata)
{
    FILE *f = out_path != NULL ? fopen(out_path, "w") : NULL;
    (void)id;
    (void)userdata;
    fprintf(f != NULL ? f : stderr, "insns: %" PRIu64 "\n", count);
    if (f != NULL) {
        fclose(f);
    }
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    int i;
    (void)info;
    for (i = 0; i < argc; i++) {
        if (strncmp(argv[i], "lo=", 3) == 0) {
            lo = strtoull(argv[i] + 3, NULL, 0);
        } else if (strncmp(argv[i], "hi=", 3) == 0) {
            hi = strtoull(argv[i] + 3, NULL, 0);
        } else if (strncmp(argv[i], "out=", 4) == 0) {
            size_t len = strlen(argv[i] + 4) + 1;   /* a copy: argv is QEMU's */
            out_path = malloc(len);
            if (out_path == NULL) {
                return -1;
            }
            memcpy(out_path, argv[i] + 4, len);
        } else {
            fprintf(stderr, "insn_count: unknown argument %s (lo=, hi=, out=)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, report, NULL);
    return 0;
}
