/*
 * glibc_compat.c - lets the wheel's extension load on glibc 2.17 although it
 * is built on a newer one (Debian 12: 2.36).
 *
 * The linker binds each call to a glibc function to the newest version of
 * that symbol it finds at build time, and the wheel needs every version it
 * names.  LLVM's archives, libstdc++.a, libcrypto.a and libtack call a few
 * functions whose current versions are recent: some are new functions
 * (arc4random 2.36, mallinfo2 2.33, getentropy 2.25, the variable
 * __libc_single_threaded 2.32), most are old functions that glibc gave a new
 * version (the math functions 2.27-2.35, stat 2.33, pthread and dl 2.34
 * when libpthread and libdl moved into libc).  CMakeLists.txt links the
 * extension with -Wl,--wrap=NAME for each NAME below, so those calls land
 * here: an old function is called at its first version (.symver), which
 * every glibc since 2.2.5 still exports; a new one is written here.  The
 * symbols stay hidden inside the extension.  x86-64 only (the versions are
 * x86-64's).  CMakeLists.txt: TACK_GLIBC_COMPAT.  The same way, the four
 * terminfo calls LLVM makes are answered here (end of file), so the wheel
 * needs no libtinfo.
 */
#define _GNU_SOURCE
#include <features.h>
#if defined(__x86_64__) && defined(__GLIBC__)

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* __wrap_NAME calls NAME@GLIBC_2.2.5 through a local alias. */
#define OLD(ret, name, params, args)                                  \
    ret tack_old_##name params;                                       \
    __asm__(".symver tack_old_" #name "," #name "@GLIBC_2.2.5");      \
    HIDDEN ret __wrap_##name params;                                  \
    HIDDEN ret __wrap_##name params { return tack_old_##name args; }

/* libm: new versions in 2.27 (float), 2.29 (double), 2.35 (hypot). */
OLD(double, exp, (double x), (x))
OLD(double, exp2, (double x), (x))
OLD(double, log, (double x), (x))
OLD(double, log2, (double x), (x))
OLD(double, pow, (double x, double y), (x, y))
OLD(double, hypot, (double x, double y), (x, y))
OLD(float, expf, (float x), (x))
OLD(float, exp2f, (float x), (x))
OLD(float, log2f, (float x), (x))
OLD(float, logf, (float x), (x))
OLD(float, powf, (float x, float y), (x, y))
OLD(float, hypotf, (float x, float y), (x, y))

/* libdl (2.34 in libc). */
OLD(void *, dlopen, (const char *file, int mode), (file, mode))
OLD(void *, dlsym, (void *h, const char *name), (h, name))
OLD(int, dlclose, (void *h), (h))
OLD(char *, dlerror, (void), ())
OLD(int, dladdr, (const void *addr, Dl_info *info), (addr, info))

/* libpthread (2.32 and 2.34 in libc). */
int __pthread_key_create(pthread_key_t *key, void (*destructor)(void *));
OLD(int, __pthread_key_create, (pthread_key_t * k, void (*d)(void *)), (k, d))
OLD(int, pthread_key_create, (pthread_key_t * k, void (*d)(void *)), (k, d))
OLD(int, pthread_key_delete, (pthread_key_t k), (k))
OLD(void *, pthread_getspecific, (pthread_key_t k), (k))
OLD(int, pthread_setspecific, (pthread_key_t k, const void *v), (k, v))
OLD(int, pthread_create, (pthread_t * t, const pthread_attr_t *a, void *(*f)(void *), void *arg),
    (t, a, f, arg))
OLD(int, pthread_detach, (pthread_t t), (t))
OLD(int, pthread_join, (pthread_t t, void **ret), (t, ret))
OLD(int, pthread_once, (pthread_once_t * o, void (*f)(void)), (o, f))
OLD(int, pthread_attr_setstacksize, (pthread_attr_t * a, size_t n), (a, n))
OLD(int, pthread_rwlock_init, (pthread_rwlock_t * l, const pthread_rwlockattr_t *a), (l, a))
OLD(int, pthread_rwlock_destroy, (pthread_rwlock_t * l), (l))
OLD(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
OLD(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
OLD(int, pthread_rwlock_unlock, (pthread_rwlock_t * l), (l))
OLD(int, pthread_sigmask, (int how, const sigset_t *set, sigset_t *old), (how, set, old))

/* stat and mknod became functions in 2.33; before, the headers called these
 * with the structure's version (1 for stat, 0 for mknod on x86-64). */
int __xstat(int ver, const char *path, struct stat *buf);
int __lxstat(int ver, const char *path, struct stat *buf);
int __fxstat(int ver, int fd, struct stat *buf);
int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev);
OLD(int, __xstat, (int v, const char *p, struct stat *b), (v, p, b))
OLD(int, __lxstat, (int v, const char *p, struct stat *b), (v, p, b))
OLD(int, __fxstat, (int v, int fd, struct stat *b), (v, fd, b))
OLD(int, __xmknod, (int v, const char *p, mode_t m, dev_t *d), (v, p, m, d))
#define STAT_VER 1
/* struct stat64 is struct stat on x86-64. */
HIDDEN int __wrap_stat(const char *p, struct stat *b);
HIDDEN int __wrap_stat(const char *p, struct stat *b) { return __wrap___xstat(STAT_VER, p, b); }
HIDDEN int __wrap_stat64(const char *p, struct stat *b);
HIDDEN int __wrap_stat64(const char *p, struct stat *b) { return __wrap___xstat(STAT_VER, p, b); }
HIDDEN int __wrap_lstat(const char *p, struct stat *b);
HIDDEN int __wrap_lstat(const char *p, struct stat *b) { return __wrap___lxstat(STAT_VER, p, b); }
HIDDEN int __wrap_lstat64(const char *p, struct stat *b);
HIDDEN int __wrap_lstat64(const char *p, struct stat *b) { return __wrap___lxstat(STAT_VER, p, b); }
HIDDEN int __wrap_fstat(int fd, struct stat *b);
HIDDEN int __wrap_fstat(int fd, struct stat *b) { return __wrap___fxstat(STAT_VER, fd, b); }
HIDDEN int __wrap_fstat64(int fd, struct stat *b);
HIDDEN int __wrap_fstat64(int fd, struct stat *b) { return __wrap___fxstat(STAT_VER, fd, b); }
HIDDEN int __wrap_mknod(const char *p, mode_t m, dev_t d);
HIDDEN int __wrap_mknod(const char *p, mode_t m, dev_t d) { return __wrap___xmknod(0, p, m, &d); }

/* ---- functions older glibcs lack ---------------------------------------- */

/* libstdc++ skips its atomics while this reads nonzero (no second thread
 * yet); glibc keeps it up to date, this copy says "threads" always, which
 * is always correct, only a little slower. */
HIDDEN char __wrap___libc_single_threaded = 0;

/* Random bytes from the kernel (getrandom, Linux 3.17), /dev/urandom before
 * it.  0, or -1 with errno set. */
static int random_bytes(void *buf, size_t len) {
    unsigned char *p = buf;
    while (len) {
        long got = syscall(SYS_getrandom, p, len, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == ENOSYS) break;
        if (got < 0) return -1;
        p += got;
        len -= (size_t)got;
    }
    if (!len) return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (len) {
        ssize_t got = read(fd, p, len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            close(fd);
            errno = EIO;
            return -1;
        }
        p += got;
        len -= (size_t)got;
    }
    close(fd);
    return 0;
}

/* getentropy (2.25): at most 256 bytes, as glibc's. */
HIDDEN int __wrap_getentropy(void *buf, size_t len);
HIDDEN int __wrap_getentropy(void *buf, size_t len) {
    if (len > 256) {
        errno = EIO;
        return -1;
    }
    return random_bytes(buf, len);
}

/* arc4random (2.36) cannot fail; neither can a process without entropy
 * go on usefully (LLVM seeds hash tables with it). */
HIDDEN uint32_t __wrap_arc4random(void);
HIDDEN uint32_t __wrap_arc4random(void) {
    uint32_t v;
    if (random_bytes(&v, sizeof v)) abort();
    return v;
}

/* mallinfo2 (2.33) is mallinfo with size_t fields; LLVM reads it only for
 * its statistics. */
struct tack_old_mallinfo {
    int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct tack_old_mallinfo tack_old_mallinfo(void);
__asm__(".symver tack_old_mallinfo,mallinfo@GLIBC_2.2.5");
HIDDEN struct mallinfo2 __wrap_mallinfo2(void);
HIDDEN struct mallinfo2 __wrap_mallinfo2(void) {
    struct tack_old_mallinfo m = tack_old_mallinfo();
    struct mallinfo2 r = {
        (unsigned)m.arena,    (unsigned)m.ordblks,  (unsigned)m.smblks,   (unsigned)m.hblks,
        (unsigned)m.hblkhd,   (unsigned)m.usmblks,  (unsigned)m.fsmblks,  (unsigned)m.uordblks,
        (unsigned)m.fordblks, (unsigned)m.keepcost,
    };
    return r;
}

/* ---- libtinfo ------------------------------------------------------------
 * LLVM asks terminfo only whether a terminal takes colours (for its own
 * diagnostics, which Tack never prints to a terminal).  Answering "no
 * terminal" here keeps libtinfo out of the wheel: Debian 12's needs glibc
 * 2.33 (stat), which auditwheel would count. */
struct term;
HIDDEN struct term *__wrap_set_curterm(struct term *t);
HIDDEN struct term *__wrap_set_curterm(struct term *t) {
    (void)t;
    return NULL;
}
HIDDEN int __wrap_del_curterm(struct term *t);
HIDDEN int __wrap_del_curterm(struct term *t) {
    (void)t;
    return 0;
}
HIDDEN int __wrap_setupterm(const char *term, int fd, int *errret);
HIDDEN int __wrap_setupterm(const char *term, int fd, int *errret) {
    (void)term;
    (void)fd;
    if (errret) *errret = -1; /* no terminfo database */
    return -1;                /* ERR */
}
HIDDEN int __wrap_tigetnum(const char *cap);
HIDDEN int __wrap_tigetnum(const char *cap) {
    (void)cap;
    return -2; /* not a numeric capability */
}

#endif
