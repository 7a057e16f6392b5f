/* texture.c - f32 Texture3Ds sampled by the texture unit.  tex.sample's
 * trilinear filtering, clamp to edge and normalized coordinates with
 * texel centers at (i + 0.5) / n are exactly a CUDA texture object's
 * linear filter with clamp addressing and normalized coordinates, over a
 * 3-D CUDA array (the only 3-D resource a texture object takes).
 *
 * A Texture3D reaches a launch as the device memory of its data (its
 * tack.Array), so the object is kept per device by that memory: made the
 * first time a kernel samples it, destroyed when the memory is freed or
 * the device closes.  The CUDA array is a copy of the data, so a write to
 * the data through Tack (a copy into it, a kernel storing to it) marks the
 * texture stale, and the next sampling launch first copies the data again,
 * queued on the device's stream ahead of the kernel. */
#include "cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cuda_texture *find(backend *b, CUdeviceptr data) {
    for (int i = 0; i < b->ntextures; i++)
        if (b->textures[i].data == data) return &b->textures[i];
    return NULL;
}

static void destroy(backend *b, cuda_texture *t) {
    if (t->object) b->cu->TexObjectDestroy(t->object);
    if (t->array) b->cu->ArrayDestroy(t->array);
    t->object = 0;
    t->array = NULL;
}

/* Removes entry t (destroyed already). */
static void drop(backend *b, cuda_texture *t) {
    *t = b->textures[--b->ntextures];
    b->any_textures = b->ntextures > 0;
}

/* The data -> the array, on the stream (ordered after any kernel that
 * wrote the data, before the kernel that samples it). */
static tack_status refresh(backend *b, cuda_texture *t, const char *what, tack_error *err) {
    CUDA_MEMCPY3D copy;
    memset(&copy, 0, sizeof copy);
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = t->data;
    copy.srcPitch = (size_t)t->shape[2] * sizeof(float);
    copy.srcHeight = (size_t)t->shape[1];
    copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.dstArray = t->array;
    copy.WidthInBytes = (size_t)t->shape[2] * sizeof(float);
    copy.Height = (size_t)t->shape[1];
    copy.Depth = (size_t)t->shape[0];
    CUresult r = b->cu->Memcpy3DAsync(&copy, b->rt.stream);
    if (r != CUDA_SUCCESS) return cuda_fail(b->cu, err, what, "cuMemcpy3DAsync", r);
    t->stale = 0;
    return TACK_OK;
}

/* A new texture's array and object, and the data copied in. */
static tack_status create(backend *b, cuda_texture *t, const char *what, tack_error *err) {
    /* The data is [u][v][w], w innermost: the array's x (width) is w. */
    CUDA_ARRAY3D_DESCRIPTOR ad;
    memset(&ad, 0, sizeof ad);
    ad.Width = (size_t)t->shape[2];
    ad.Height = (size_t)t->shape[1];
    ad.Depth = (size_t)t->shape[0];
    ad.Format = CU_AD_FORMAT_FLOAT;
    ad.NumChannels = 1;
    CUresult r = b->cu->Array3DCreate(&t->array, &ad);
    if (r != CUDA_SUCCESS) {
        t->array = NULL;
        return cuda_fail(b->cu, err, what, "cuArray3DCreate", r);
    }
    tack_status st = refresh(b, t, what, err);
    if (st) return st;
    CUDA_RESOURCE_DESC rd;
    memset(&rd, 0, sizeof rd);
    rd.resType = CU_RESOURCE_TYPE_ARRAY;
    rd.res.array.hArray = t->array;
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof td);
    for (int d = 0; d < 3; d++) td.addressMode[d] = CU_TR_ADDRESS_MODE_CLAMP;
    td.filterMode = CU_TR_FILTER_MODE_LINEAR;
    td.flags = CU_TRSF_NORMALIZED_COORDINATES;
    if ((r = b->cu->TexObjectCreate(&t->object, &rd, &td, NULL)) != CUDA_SUCCESS) {
        t->object = 0;
        return cuda_fail(b->cu, err, what, "cuTexObjectCreate", r);
    }
    return TACK_OK;
}

tack_status cuda_texture_get(backend *b, CUdeviceptr data, const int64_t shape[3],
                             const char *kernel, const char *param, CUtexObject *out,
                             tack_error *err) {
    *out = 0;
    char what[256];
    snprintf(what, sizeof what, "kernel '%s': texture '%s'", kernel, param);
    /* image3d_max is (width, height, depth): the data's axes 2, 1, 0. */
    for (int d = 0; d < 3; d++)
        if (shape[d] < 1 || shape[d] > b->caps.image3d_max[2 - d])
            return backend_error(err, TACK_ERR_VALUE,
                                 "%s: extents (%lld, %lld, %lld) do not fit %s's 3-D textures "
                                 "(1 to (%lld, %lld, %lld), innermost axis last)",
                                 what, (long long)shape[0], (long long)shape[1],
                                 (long long)shape[2], b->description,
                                 (long long)b->caps.image3d_max[2],
                                 (long long)b->caps.image3d_max[1],
                                 (long long)b->caps.image3d_max[0]);
    tack_status st = TACK_OK;
    pthread_mutex_lock(&b->textures_lock);
    cuda_texture *t = find(b, data);
    if (t && memcmp(t->shape, shape, sizeof t->shape)) {
        /* The same memory seen with other extents: a texture anew. */
        destroy(b, t);
        drop(b, t);
        t = NULL;
    }
    if (!t) {
        if (b->ntextures == b->textures_cap) {
            int cap = b->textures_cap ? 2 * b->textures_cap : 8;
            cuda_texture *n = realloc(b->textures, (size_t)cap * sizeof *n);
            if (!n) {
                pthread_mutex_unlock(&b->textures_lock);
                return backend_error(err, TACK_ERR_NOMEM, "%s: out of memory", what);
            }
            b->textures = n;
            b->textures_cap = cap;
        }
        t = &b->textures[b->ntextures];
        memset(t, 0, sizeof *t);
        t->data = data;
        memcpy(t->shape, shape, sizeof t->shape);
        if ((st = create(b, t, what, err))) {
            destroy(b, t);
        } else {
            b->ntextures++;
            b->any_textures = 1;
        }
    } else if (t->stale) {
        st = refresh(b, t, what, err);
    }
    if (!st) *out = t->object;
    pthread_mutex_unlock(&b->textures_lock);
    return st;
}

void cuda_texture_written(backend *b, CUdeviceptr data) {
    if (!b->any_textures) return;
    pthread_mutex_lock(&b->textures_lock);
    cuda_texture *t = find(b, data);
    if (t) t->stale = 1;
    pthread_mutex_unlock(&b->textures_lock);
}

void cuda_texture_forget(backend *b, CUdeviceptr data) {
    if (!b->any_textures) return;
    pthread_mutex_lock(&b->textures_lock);
    cuda_texture *t = find(b, data);
    if (t) {
        destroy(b, t);
        drop(b, t);
    }
    pthread_mutex_unlock(&b->textures_lock);
}

void cuda_textures_free(backend *b) {
    pthread_mutex_lock(&b->textures_lock);
    for (int i = 0; i < b->ntextures; i++) destroy(b, &b->textures[i]);
    free(b->textures);
    b->textures = NULL;
    b->ntextures = b->textures_cap = 0;
    b->any_textures = 0;
    pthread_mutex_unlock(&b->textures_lock);
}
