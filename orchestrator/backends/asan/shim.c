/* csorch's ASan fold shim: repeated reports are counted, not printed (issue #14).
 *
 * In recover mode, code built with -fsanitize=address -fsanitize-recover=address calls
 * __asan_report_{load,store}{1,2,4,8,16,_n}_noabort for every bad access, and the runtime
 * prints each one in full: a use-after-free inside a loop costs milliseconds per
 * iteration (an unwind, a symbolization, kilobytes of log). Preloaded before the runtime
 * (LD_PRELOAD="this.so libasan.so", ASAN_OPTIONS=verify_asan_link_order=0), this library
 * defines those entry points. A report's key is its faulting pc, access, size and the
 * shadow byte of the address (which tells use-after-free from overflow). The first
 * CSORCH_ASAN_PRINT_LIMIT reports of a key (default 1; 0: no limit) in the current epoch
 * go on to the runtime, which prints them as always; later ones are only counted.
 * csorch_asan_fold_flush() ends an epoch: one line per key that folded anything, then the
 * table is forgotten. csorch's pytest plugin calls it at each case's start and end (so a
 * count belongs to the case between the markers around it); an atexit handler, registered
 * at the first report (after the runtime's own, so it runs before the runtime prints its
 * exit stats), flushes the last epoch. A key's first counted repeat opens it, its flush
 * closes it with the count:
 *
 *   ==4540==csorch-asan-fold: folding READ of size 8 at pc 0x7f31344a21be shadow fd
 *   ==4540==csorch-asan-fold: 4999 more READ of size 8 at pc 0x7f31344a21be shadow fd
 *
 * The hand-over is a tail call (checked by csorch's tests): the runtime sees the
 * instrumented caller's pc and frame, so a printed report is the one it would have
 * printed without this library. Not folded: reports the runtime raises itself (its
 * interceptors: memcpy, strlen, ...; double free), which reach no entry point here.
 * No malloc and no stdio: write(2), open(2), getpid, getenv, dlsym and raw syscall(2) only. A full table
 * passes reports on (printed, never lost), and so does a forked child (see `loader`).
 *
 * The checker's own channel: the lines above go through the runtime's
 * __sanitizer_report_error_summary, so they land where its reports land (the per-process
 * file of ASAN_OPTIONS=log_path=P, P.<pid>), in order with them; a subject's stdout and
 * stderr are not that file. When CSORCH_ASAN_STARTED=S is set, each process that loads
 * this library (an exec'd program: a forked child does not run constructors) creates the
 * file S.<pid> at start, with the checker options it started with: csorch then requires P.<pid> to end with the runtime's exit
 * stats, so that a process killed before its exit is never silently absent. A process
 * that ends with _exit (dash does; so do multiprocessing's workers) runs no exit
 * handlers, so no exit stats: this library's _exit and _Exit write its end record
 * instead, "==<pid>==csorch-asan-exit: _exit(<status>)", through the runtime, then end
 * the process as libc's would. Only a process that dies (a signal) leaves neither.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SLOTS 4096

struct slot {
  uintptr_t pc; /* 0: free */
  size_t size;
  unsigned char write, shadow;
  uint64_t printed, folded;
};

static struct slot table[SLOTS];
static int table_lock;
/* the process that loaded this library: a child it forks folds nothing (its exit need not
 * run exit handlers, as multiprocessing's _exit does not, and a count would be lost) and
 * never writes its copy of the parent's counts; an exec'd program loads its own */
static pid_t loader;
static int exit_hooked;
static long print_limit = -1; /* -1: not read yet */
static int shadow_known;      /* 0: not asked yet, 1: known, -1: unavailable */
static size_t shadow_scale, shadow_offset;

static void lock(void) {
  while (__atomic_test_and_set(&table_lock, __ATOMIC_ACQUIRE)) {
  }
}

static void unlock(void) { __atomic_clear(&table_lock, __ATOMIC_RELEASE); }

static long read_limit(void) {
  const char *text = getenv("CSORCH_ASAN_PRINT_LIMIT");
  long n = 0;
  if (!text || !*text) return 1;
  for (; *text; text++) {
    if (*text < '0' || *text > '9' || n > 1000000000) return 1;
    n = n * 10 + (*text - '0');
  }
  return n;
}

static unsigned char shadow_of(uintptr_t addr) {
  if (!shadow_known) {
    void (*get)(size_t *, size_t *) =
        (void (*)(size_t *, size_t *))dlsym(RTLD_DEFAULT, "__asan_get_shadow_mapping");
    shadow_known = -1;
    if (get) {
      get(&shadow_scale, &shadow_offset);
      shadow_known = 1;
    }
  }
  return shadow_known == 1 ? *(unsigned char *)((addr >> shadow_scale) + shadow_offset) : 0;
}

static void put(char **p, const char *s) {
  while (*s) *(*p)++ = *s++;
}

static void put_number(char **p, uint64_t v, unsigned base, int width) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  while (n < width) digits[n++] = '0';
  while (n) *(*p)++ = digits[--n];
}

static void (*report_line)(const char *); /* the runtime's, found at the first line */
static int report_known;

static void write_all(const char *buf, size_t len) {
  while (len) {
    ssize_t n = write(2, buf, len);
    if (n <= 0) return;
    buf += n;
    len -= (size_t)n;
  }
}

/* "N more" (count > 0) closes a key's epoch; "folding" (count 0) opens it, written at its
 * first counted repeat, so that a count that never came (a process ended without exit
 * handlers, a case whose end flush did not run) is a key opened and never closed, which
 * the parser reports, not a silent undercount */
static void write_line(const struct slot *s, uint64_t count) {
  char line[200], *p = line;
  put(&p, "==");
  put_number(&p, (uint64_t)getpid(), 10, 1);
  put(&p, "==csorch-asan-fold: ");
  if (count) {
    put_number(&p, count, 10, 1);
    put(&p, " more ");
  } else {
    put(&p, "folding ");
  }
  put(&p, s->write ? "WRITE of size " : "READ of size ");
  put_number(&p, s->size, 10, 1);
  put(&p, " at pc 0x");
  put_number(&p, s->pc, 16, 1);
  put(&p, " shadow ");
  put_number(&p, s->shadow, 16, 2);
  if (!report_known) {
    report_line = (void (*)(const char *))dlsym(RTLD_DEFAULT, "__sanitizer_report_error_summary");
    report_known = 1;
  }
  if (report_line) { /* the runtime adds the newline, in its log, after its reports */
    *p = 0;
    report_line(line);
    return;
  }
  *p++ = '\n';
  write_all(line, (size_t)(p - line));
}

void csorch_asan_fold_flush(void);

static void write_exit(int status) {
  char line[64], *p = line;
  if (!report_known) {
    report_line = (void (*)(const char *))dlsym(RTLD_DEFAULT, "__sanitizer_report_error_summary");
    report_known = 1;
  }
  if (!report_line) return;
  put(&p, "==");
  put_number(&p, (uint64_t)getpid(), 10, 1);
  put(&p, "==csorch-asan-exit: _exit(");
  put_number(&p, (uint64_t)(status & 0xff), 10, 1);
  put(&p, ")");
  *p = 0;
  report_line(line);
}

/* _exit and _Exit end a process without exit handlers: its folded counts and its end
 * record are written here first (a forked child folds nothing; its record is written) */
void _exit(int status) {
  static void (*next)(int);
  if (getpid() == loader) csorch_asan_fold_flush();
  write_exit(status);
  if (!next) next = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
  next(status);
  __builtin_unreachable();
}

void _Exit(int status) { _exit(status); }

/* csorch's ASAN_OPTIONS as the runtime's defaults (CSORCH_ASAN_OPTIONS, set beside
 * ASAN_OPTIONS to the same text): a subject that unsets ASAN_OPTIONS before it starts a
 * child (a test harness that scrubs its environment) would leave that child's runtime with
 * its built-in options: reports on its stderr, outside the channel, and the link-order
 * check that ends it before its first line. The runtime reads these first and
 * ASAN_OPTIONS on top, so what a child sets still wins (a log_path of its own leaves its
 * start record without its log: inconclusive). Read from /proc/self/environ, the
 * environment the process was started with, by raw system calls: the runtime asks while
 * it initializes, before its interceptors of open(2) and read(2) have their real
 * functions (a call through them then jumps to 0). */
static char default_options[16384];

static void read_default_options(void) {
  static const char key[] = "CSORCH_ASAN_OPTIONS=";
  char buf[4096];
  size_t matched = 0, out = 0;
  int at_start = 1, copying = 0, skipping = 0;
  long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (;;) {
    long got = syscall(SYS_read, fd, buf, sizeof buf);
    if (got <= 0) break;
    for (long i = 0; i < got; i++) {
      char c = buf[i];
      if (copying) {
        if (c == 0 || out + 1 >= sizeof default_options) {
          default_options[out] = 0;
          syscall(SYS_close, fd);
          return;
        }
        default_options[out++] = c;
        continue;
      }
      if (c == 0) {
        at_start = 1, matched = 0, skipping = 0;
        continue;
      }
      if (skipping) continue;
      if (at_start || matched) {
        at_start = 0;
        if (c == key[matched]) {
          if (++matched == sizeof key - 1) copying = 1;
          continue;
        }
      }
      skipping = 1, matched = 0;
    }
  }
  default_options[copying ? out : 0] = 0;
  syscall(SYS_close, fd);
}

const char *__asan_default_options(void) {
  static int read_once;
  if (!read_once) {
    read_once = 1;
    read_default_options();
  }
  return default_options;
}

/* one line of S.<pid>: "NAME=value" as the process started with it, "-NAME" without */
static void write_fd_all(int fd, const char *buf, size_t len) {
  while (len) {
    ssize_t n = write(fd, buf, len);
    if (n <= 0) return;
    buf += n;
    len -= (size_t)n;
  }
}

static void record_variable(int fd, const char *name) {
  const char *value = getenv(name);
  size_t n = 0, m = 0;
  while (name[n]) n++;
  if (!value) {
    write_fd_all(fd, "-", 1);
    write_fd_all(fd, name, n);
    write_fd_all(fd, "\n", 1);
    return;
  }
  while (value[m]) m++;
  write_fd_all(fd, name, n);
  write_fd_all(fd, "=", 1);
  write_fd_all(fd, value, m);
  write_fd_all(fd, "\n", 1);
}

/* S.<pid> for CSORCH_ASAN_STARTED=S: this process started under csorch's ASan, with the
 * checker options it started with (ASAN_OPTIONS and the defaults): csorch holds them to
 * the options it set, so that a subject that starts a process of its own with weaker
 * ones (poison_heap=0, a report path elsewhere) is seen */
static void record_start(void) {
  const char *prefix = getenv("CSORCH_ASAN_STARTED");
  char path[4096], *p = path;
  size_t n = 0;
  if (!prefix || !*prefix) return;
  while (prefix[n]) n++;
  if (n > sizeof path - 32) return;
  put(&p, prefix);
  put(&p, ".");
  put_number(&p, (uint64_t)getpid(), 10, 1);
  *p = 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  record_variable(fd, "ASAN_OPTIONS");
  record_variable(fd, "CSORCH_ASAN_OPTIONS");
  close(fd);
}

__attribute__((constructor)) static void remember_loader(void) {
  loader = getpid();
  record_start();
}

void csorch_asan_fold_flush(void) {
  if (getpid() != loader) return;
  lock();
  for (int i = 0; i < SLOTS; i++) {
    struct slot *s = &table[i];
    if (s->pc && s->folded) write_line(s, s->folded);
    s->pc = 0;
  }
  unlock();
}

static void flush_at_exit(void) { csorch_asan_fold_flush(); }

/* 1: counted, the caller returns; 0: the caller hands the report to the runtime */
static int fold(uintptr_t pc, int write, size_t size, uintptr_t addr) {
  if (getpid() != loader) return 0;
  unsigned char shadow = shadow_of(addr);
  int counted = 0;
  struct slot opened = {0, 0, 0, 0, 0, 0};
  lock();
  if (print_limit < 0) print_limit = read_limit();
  if (!exit_hooked) {
    exit_hooked = 1;
    atexit(flush_at_exit);
  }
  if (print_limit > 0) {
    size_t h = (size_t)((pc ^ (pc >> 17) ^ (size * 31u) ^ ((size_t)shadow << 7)) % SLOTS);
    for (int n = 0; n < SLOTS; n++, h = (h + 1) % SLOTS) {
      struct slot *s = &table[h];
      if (!s->pc) {
        *s = (struct slot){pc, size, (unsigned char)write, shadow, 1, 0};
        break;
      }
      if (s->pc == pc && s->size == size && s->write == write && s->shadow == shadow) {
        if (s->printed < (uint64_t)print_limit) {
          s->printed++;
        } else {
          if (s->folded++ == 0) opened = *s;
          counted = 1;
        }
        break;
      }
    }
  }
  unlock();
  if (opened.pc) write_line(&opened, 0);
  return counted;
}

/* the last statement is a tail call: the runtime takes the instrumented caller as its pc */
#define FIXED(name, write, size)                                                  \
  void name(uintptr_t addr) {                                                     \
    static void (*next)(uintptr_t);                                               \
    if (fold((uintptr_t)__builtin_return_address(0), write, size, addr)) return;  \
    if (!next) next = (void (*)(uintptr_t))dlsym(RTLD_NEXT, #name);               \
    next(addr);                                                                   \
  }

#define SIZED(name, write)                                                        \
  void name(uintptr_t addr, size_t size) {                                        \
    static void (*next)(uintptr_t, size_t);                                       \
    if (fold((uintptr_t)__builtin_return_address(0), write, size, addr)) return;  \
    if (!next) next = (void (*)(uintptr_t, size_t))dlsym(RTLD_NEXT, #name);       \
    next(addr, size);                                                             \
  }

FIXED(__asan_report_load1_noabort, 0, 1)
FIXED(__asan_report_load2_noabort, 0, 2)
FIXED(__asan_report_load4_noabort, 0, 4)
FIXED(__asan_report_load8_noabort, 0, 8)
FIXED(__asan_report_load16_noabort, 0, 16)
FIXED(__asan_report_store1_noabort, 1, 1)
FIXED(__asan_report_store2_noabort, 1, 2)
FIXED(__asan_report_store4_noabort, 1, 4)
FIXED(__asan_report_store8_noabort, 1, 8)
FIXED(__asan_report_store16_noabort, 1, 16)
SIZED(__asan_report_load_n_noabort, 0)
SIZED(__asan_report_store_n_noabort, 1)
