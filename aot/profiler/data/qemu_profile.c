/*
 * aot profile's QEMU plugin: counts the guest instructions executed and,
 * each time the guest enters the marker function (its first instruction is
 * at address `marker`), writes the running count, one line per entry:
 *
 *   cc -O2 -shared -fPIC -o qemu_profile.so qemu_profile.c
 *   qemu-system-arm -M mps2-an386 ... -plugin ./qemu_profile.so,marker=0x1234,out=FILE
 *
 * The firmware calls the marker before every kernel call of the model's
 * entry function (the generated C's <NAME>_PROFILE_CALL hook), so the
 * differences of consecutive counts are the instructions of each call
 * (aot/profiler/qemu.py subtracts the marker's own cost, measured by two
 * back-to-back calls).  Counting is an inline add per translated
 * instruction; the marker gets a callback at the start of its translation
 * block, which the entry of a function always begins, before any of the
 * block's instructions count.  One vCPU (the MPS2 boards), so one counter
 * is exact.  The plugin API (version 1, QEMU 7.2 ships no header) is
 * declared below, as in examples/embedded/insn_count.c.
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
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS,
                            QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
                                          qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
                                                enum qemu_plugin_op op, void *ptr,
                                                uint64_t imm);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;
/* ------------------------------------------------------------------ */

#define MAX_MARKS 65536

static uint64_t count;
static uint64_t marker = UINT64_MAX;
static uint64_t marks[MAX_MARKS];
static size_t n_marks;
static int overflow;
static char *out_path;

static void on_marker(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (n_marks < MAX_MARKS) {
        marks[n_marks++] = count;
    } else {
        overflow = 1;
    }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t i, n = qemu_plugin_tb_n_insns(tb);
    (void)id;
    if (qemu_plugin_tb_vaddr(tb) == marker) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_marker, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
    for (i = 0; i < n; i++) {
        qemu_plugin_register_vcpu_insn_exec_inline(qemu_plugin_tb_get_insn(tb, i),
                                                   QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
    }
}

static void report(qemu_plugin_id_t id, void *userdata)
{
    FILE *f = out_path != NULL ? fopen(out_path, "w") : NULL;
    FILE *to = f != NULL ? f : stderr;
    size_t i;
    (void)id;
    (void)userdata;
    for (i = 0; i < n_marks; i++) {
        fprintf(to, "mark %" PRIu64 "\n", marks[i]);
    }
    fprintf(to, "insns %" PRIu64 "\n", count);
    if (overflow) {
        fprintf(to, "overflow\n");
    }
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
        if (strncmp(argv[i], "marker=", 7) == 0) {
            marker = strtoull(argv[i] + 7, NULL, 0);
        } else if (strncmp(argv[i], "out=", 4) == 0) {
            size_t len = strlen(argv[i] + 4) + 1;   /* a copy: argv is QEMU's */
            out_path = malloc(len);
            if (out_path == NULL) {
                return -1;
            }
            memcpy(out_path, argv[i] + 4, len);
        } else {
            fprintf(stderr, "qemu_profile: unknown argument %s (marker=, out=)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, report, NULL);
    return 0;
}
