/* Byte orders and the zip CRC: the formats fix their byte order (little-endian, legacy VTK
 * big-endian), so values are stored byte by byte whatever the host's order. */
#include <pthread.h>
#include <string.h>

#include "streamlines_internal.h"

void sl_le16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

void sl_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

void sl_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

void sl_be32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static uint32_t float_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

void sl_lef32(unsigned char *p, float v) { sl_le32(p, float_bits(v)); }
void sl_bef32(unsigned char *p, float v) { sl_be32(p, float_bits(v)); }

/* CRC-32 of zip (ISO 3309, reflected polynomial 0xEDB88320) by a table built once
 * (pthread_once: writers may run on several threads). */
static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
}

uint32_t sl_crc32(uint32_t crc, const unsigned char *data, size_t bytes)
{
    pthread_once(&table_once, build_table);
    crc = ~crc;
    for (size_t i = 0; i < bytes; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
