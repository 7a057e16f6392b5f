/*
 * arena.h - bump allocation for AST and IR nodes.  Everything allocated from
 * an arena is freed at once with it; nodes are never freed one by one.
 */
#ifndef TACK_ARENA_H
#define TACK_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
    arena_block *head;
} arena;

void arena_init(arena *a);
void arena_free(arena *a);
/* Zeroed, 16-byte aligned memory; returns NULL only when out of memory. */
void *arena_alloc(arena *a, size_t size);
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
/* Grows an arena array: returns a copy of `old` (n elements of `elem`
 * bytes) with room for `cap` elements. */
void *arena_grow(arena *a, void *old, size_t n, size_t cap, size_t elem);

#endif
