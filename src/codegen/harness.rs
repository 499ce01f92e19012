//! The generated `main()`: load weights, read inputs, call `dm_run` (warm-up, then timed
//! repetitions), write outputs and per-repetition times.
//!
//! Protocol (shared with `run.rs`): `prog WEIGHTS IODIR WARMUP REPS`; input `k` is read from
//! `IODIR/in<k>.bin`, output `k` written to `IODIR/out<k>.bin` (raw little-endian elements),
//! and `IODIR/times.txt` gets one line per repetition, the wall time of `dm_run` alone in
//! milliseconds (CLOCK_MONOTONIC), so process start-up and I/O never count. File names use
//! positions, never model names. Failures print a message and exit non-zero.

use super::expr::ctype;
use super::CArg;

/// Allocation and file helpers used by `dm_init` and `main`.
pub(crate) const IO_HELPERS: &str = r#"static void dm_die(const char* what, const char* path) {
    fprintf(stderr, "dmove harness: %s: %s\n", what, path);
    exit(3);
}
static void* dm_alloc(size_t bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) dm_die("out of memory", "aligned_alloc");
    memset(p, 0, rounded ? rounded : 64);
    return p;
}
static void dm_path(char* out, size_t cap, const char* dir, const char* file) {
    if ((size_t)snprintf(out, cap, "%s/%s", dir, file) >= cap) dm_die("path too long", dir);
}
static unsigned char* dm_load(const char* path, size_t bytes) {
    unsigned char* p = (unsigned char*)dm_alloc(bytes);
    if (bytes == 0) return p;
    FILE* f = fopen(path, "rb");
    if (!f) dm_die("cannot open", path);
    if (fread(p, 1, bytes, f) != bytes || fgetc(f) != EOF) dm_die("wrong size", path);
    fclose(f);
    return p;
}
static void* dm_read(const char* dir, const char* file, size_t bytes) {
    char path[4096];
    dm_path(path, sizeof path, dir, file);
    return dm_load(path, bytes);
}
static void dm_write(const char* dir, const char* file, const void* p, size_t bytes) {
    char path[4096];
    dm_path(path, sizeof path, dir, file);
    FILE* f = fopen(path, "wb");
    if (!f) dm_die("cannot create", path);
    if (fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) dm_die("cannot write", path);
}
"#;

/// The text of `main()` for a program with these inputs and outputs (`dm_run` takes inputs
/// then outputs, in signature order).
pub(crate) fn main_fn(inputs: &[CArg], outputs: &[CArg]) -> String {
    let mut s = String::from(
        "int main(int argc, char** argv) {\n\
         \x20   if (argc != 5) {\n\
         \x20       fprintf(stderr, \"usage: %s WEIGHTS IODIR WARMUP REPS\\n\", argv[0]);\n\
         \x20       return 2;\n\
         \x20   }\n\
         \x20   const char* dir = argv[2];\n\
         \x20   long warmup = strtol(argv[3], NULL, 10), reps = strtol(argv[4], NULL, 10);\n\
         \x20   dm_init(argv[1]);\n",
    );
    let mut args = Vec::new();
    for (k, a) in inputs.iter().enumerate() {
        let t = ctype(a.dtype);
        s.push_str(&format!(
            "    {t}* dm_in{k} = ({t}*)dm_read(dir, \"in{k}.bin\", {});\n",
            a.bytes()
        ));
        args.push(format!("dm_in{k}"));
    }
    for (k, a) in outputs.iter().enumerate() {
        let t = ctype(a.dtype);
        s.push_str(&format!(
            "    {t}* dm_out{k} = ({t}*)dm_alloc({});\n",
            a.bytes()
        ));
        args.push(format!("dm_out{k}"));
    }
    let call = format!("dm_run({});", args.join(", "));
    s.push_str(&format!(
        "    for (long r = 0; r < warmup; r++) {call}\n\
         \x20   char times_path[4096];\n\
         \x20   dm_path(times_path, sizeof times_path, dir, \"times.txt\");\n\
         \x20   FILE* times = fopen(times_path, \"w\");\n\
         \x20   if (!times) dm_die(\"cannot create\", times_path);\n\
         \x20   for (long r = 0; r < reps; r++) {{\n\
         \x20       struct timespec t0, t1;\n\
         \x20       clock_gettime(CLOCK_MONOTONIC, &t0);\n\
         \x20       {call}\n\
         \x20       clock_gettime(CLOCK_MONOTONIC, &t1);\n\
         \x20       fprintf(times, \"%.6f\\n\", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);\n\
         \x20   }}\n\
         \x20   if (fclose(times) != 0) dm_die(\"cannot write\", times_path);\n"
    ));
    for (k, a) in outputs.iter().enumerate() {
        s.push_str(&format!(
            "    dm_write(dir, \"out{k}.bin\", dm_out{k}, {});\n",
            a.bytes()
        ));
    }
    for arg in &args {
        s.push_str(&format!("    free({arg});\n"));
    }
    s.push_str("    dm_free();\n    return 0;\n}\n");
    s
}
