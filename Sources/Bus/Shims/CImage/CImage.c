#include "CImage.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

struct appd_jpeg_error {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char *message;
    size_t message_length;
};

static void appd_jpeg_fail(j_common_ptr info) {
    struct appd_jpeg_error *error = (struct appd_jpeg_error *)info->err;
    char text[JMSG_LENGTH_MAX];
    (*info->err->format_message)(info, text);
    snprintf(error->message, error->message_length, "%s", text);
    longjmp(error->jump, 1);
}

static void appd_jpeg_quiet(j_common_ptr info, int level) { (void)info; (void)level; }

/* libjpeg's error manager that writes the reason into `message` and jumps back (the caller's
   setjmp), and says nothing of warnings. */
static struct jpeg_error_mgr *appd_jpeg_errors(struct appd_jpeg_error *failure, char *message, size_t message_length) {
    struct jpeg_error_mgr *manager = jpeg_std_error(&failure->manager);
    manager->error_exit = appd_jpeg_fail;
    manager->emit_message = appd_jpeg_quiet;
    failure->message = message;
    failure->message_length = message_length;
    return manager;
}

/* Box-averages `src` (sw × sh, 3 bytes a pixel) into `dst` (dw × dh). */
static void appd_downsample(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh) {
    for (int y = 0; y < dh; y++) {
        int y0 = (int)((long)y * sh / dh), y1 = (int)((long)(y + 1) * sh / dh);
        if (y1 <= y0) y1 = y0 + 1;
        for (int x = 0; x < dw; x++) {
            int x0 = (int)((long)x * sw / dw), x1 = (int)((long)(x + 1) * sw / dw);
            if (x1 <= x0) x1 = x0 + 1;
            unsigned long sum[3] = {0, 0, 0}, n = 0;
            for (int yy = y0; yy < y1; yy++) {
                const uint8_t *row = src + ((size_t)yy * sw + x0) * 3;
                for (int xx = x0; xx < x1; xx++, row += 3) {
                    sum[0] += row[0]; sum[1] += row[1]; sum[2] += row[2]; n++;
                }
            }
            uint8_t *p = dst + ((size_t)y * dw + x) * 3;
            p[0] = (uint8_t)(sum[0] / n); p[1] = (uint8_t)(sum[1] / n); p[2] = (uint8_t)(sum[2] / n);
        }
    }
}

int appd_image_encode_rgb(const uint8_t *rgb, int width, int height, int quality, uint8_t **out, size_t *out_length, char *error, size_t error_length) {
    struct jpeg_compress_struct info;
    struct appd_jpeg_error failure;
    unsigned char *buffer = NULL;
    unsigned long size = 0;
    memset(&info, 0, sizeof info);
    info.err = appd_jpeg_errors(&failure, error, error_length);
    if (setjmp(failure.jump)) {
        jpeg_destroy_compress(&info);
        free(buffer);
        return -1;
    }
    jpeg_create_compress(&info);
    jpeg_mem_dest(&info, &buffer, &size);
    info.image_width = (JDIMENSION)width;
    info.image_height = (JDIMENSION)height;
    info.input_components = 3;
    info.in_color_space = JCS_RGB;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, quality, TRUE);
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)info.next_scanline * width * 3);
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    *out = buffer;
    *out_length = size;
    return 0;
}

/* Decodes a JPEG into RGB, at the smallest DCT scale that still covers `max_side`. */
static uint8_t *appd_decode_jpeg(const uint8_t *data, size_t length, int max_side, int *width, int *height, char *error, size_t error_length) {
    struct jpeg_decompress_struct info;
    struct appd_jpeg_error failure;
    uint8_t *volatile pixels = NULL;
    memset(&info, 0, sizeof info);
    info.err = appd_jpeg_errors(&failure, error, error_length);
    if (setjmp(failure.jump)) {
        jpeg_destroy_decompress(&info);
        free(pixels);
        return NULL;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, (unsigned long)length);
    jpeg_read_header(&info, TRUE);
    info.out_color_space = JCS_RGB;
    unsigned int longest = info.image_width > info.image_height ? info.image_width : info.image_height;
    info.scale_num = 1;
    info.scale_denom = 1;
    for (unsigned int d = 8; d > 1; d /= 2) {
        if (longest / d >= (unsigned int)max_side) { info.scale_denom = d; break; }
    }
    jpeg_start_decompress(&info);
    *width = (int)info.output_width;
    *height = (int)info.output_height;
    pixels = malloc((size_t)info.output_width * info.output_height * 3);
    if (!pixels) {
        snprintf(error, error_length, "out of memory for %ux%u pixels", info.output_width, info.output_height);
        jpeg_destroy_decompress(&info);
        return NULL;
    }
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = pixels + (size_t)info.output_scanline * info.output_width * 3;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return pixels;
}

/* Decodes a PNG into RGB over white, refusing more than `max_pixels` before decoding. */
static uint8_t *appd_decode_png(const uint8_t *data, size_t length, long max_pixels, int *width, int *height, char *error, size_t error_length) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, length)) {
        snprintf(error, error_length, "%s", image.message);
        return NULL;
    }
    if ((long)image.width * (long)image.height > max_pixels) {
        snprintf(error, error_length, "a %ux%u image is larger than a thumbnail is made of", image.width, image.height);
        png_image_free(&image);
        return NULL;
    }
    image.format = PNG_FORMAT_RGB;
    uint8_t *pixels = malloc(PNG_IMAGE_SIZE(image));
    if (!pixels) {
        snprintf(error, error_length, "out of memory");
        png_image_free(&image);
        return NULL;
    }
    png_color white = {255, 255, 255};
    if (!png_image_finish_read(&image, &white, pixels, 0, NULL)) {
        snprintf(error, error_length, "%s", image.message);
        free(pixels);
        return NULL;
    }
    *width = (int)image.width;
    *height = (int)image.height;
    return pixels;
}

int appd_image_thumbnail(const uint8_t *data, size_t length, int png, int max_side, int quality, long max_source_pixels,
                         uint8_t **out, size_t *out_length, int *out_width, int *out_height, char *error, size_t error_length) {
    int width = 0, height = 0;
    uint8_t *pixels = png ? appd_decode_png(data, length, max_source_pixels, &width, &height, error, error_length)
                          : appd_decode_jpeg(data, length, max_side, &width, &height, error, error_length);
    if (!pixels) return -1;
    int tw = width, th = height;
    if (width > max_side || height > max_side) {
        if (width >= height) { tw = max_side; th = (int)((long)height * max_side / width); }
        else { th = max_side; tw = (int)((long)width * max_side / height); }
        if (tw < 1) tw = 1;
        if (th < 1) th = 1;
    }
    uint8_t *scaled = pixels;
    if (tw != width || th != height) {
        scaled = malloc((size_t)tw * th * 3);
        if (!scaled) { free(pixels); snprintf(error, error_length, "out of memory"); return -1; }
        appd_downsample(pixels, width, height, scaled, tw, th);
        free(pixels);
    }
    int status = appd_image_encode_rgb(scaled, tw, th, quality, out, out_length, error, error_length);
    free(scaled);
    if (status == 0) { *out_width = tw; *out_height = th; }
    return status;
}

void appd_image_free(void *pointer) { free(pointer); }
