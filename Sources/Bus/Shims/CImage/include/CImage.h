#ifndef APPD_CIMAGE_H
#define APPD_CIMAGE_H

#include <stddef.h>
#include <stdint.h>

/* Thumbnails of JPEG and PNG images, with the system's libjpeg (turbo) and libpng. Every
   function reports a failure (a damaged file, a limit) as -1 with the reason in `error`; libjpeg's
   longjmp never crosses into Swift. A JPEG is decoded at 1/2, 1/4 or 1/8 of its size by the
   library itself (DCT scaling) when that still covers the thumbnail, so a 50-megapixel photo
   costs a fraction of its pixels. */

/// A JPEG (quality 1-100) of the image in `data` (JPEG or PNG, by `png`), scaled to fit a
/// `max_side` × `max_side` box (never enlarged). `max_source_pixels`: a PNG larger than this is
/// refused before it is decoded. On success `*out` is malloc'd (free it with appd_image_free).
int appd_image_thumbnail(const uint8_t *data, size_t length, int png, int max_side, int quality, long max_source_pixels,
                         uint8_t **out, size_t *out_length, int *out_width, int *out_height, char *error, size_t error_length);

/// A JPEG of `width` × `height` RGB pixels (for tests and fixtures).
int appd_image_encode_rgb(const uint8_t *rgb, int width, int height, int quality, uint8_t **out, size_t *out_length, char *error, size_t error_length);

void appd_image_free(void *pointer);

#endif
