/* SPDX-License-Identifier: Apache-2.0
 *
 * MD2 (RFC 1319), HMAC-MD2 (RFC 2104 with MD2's 16-byte block) and the integrity answer built
 * on them (integrity.h). The message is serialised field by field in little-endian order, the
 * layout the runtime hashes on x86-64 and aarch64 alike.
 */
#include "exptab/integrity.h"

#include <string.h>

/* RFC 1319's permutation of 0..255 built from the digits of pi. */
static const uint8_t S[256] = {
    41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161, 236, 240, 6,   19,  98,  167, 5,
    243, 192, 199, 115, 140, 152, 147, 43,  217, 188, 76,  130, 202, 30,  155, 87,  60,  253, 212,
    224, 22,  103, 66,  111, 24,  138, 23,  229, 18,  190, 78,  196, 214, 218, 158, 222, 73,  160,
    251, 245, 142, 187, 47,  238, 122, 169, 104, 121, 145, 21,  178, 7,   63,  148, 194, 16,  137,
    11,  34,  95,  33,  128, 127, 93,  154, 90,  144, 50,  39,  53,  62,  204, 231, 191, 247, 151,
    3,   255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,  172, 86,  170, 198, 79,  184,
    56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4,   241, 69,  157, 112, 89,  100,
    113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,   27,  96,  37,  173, 174, 176, 185, 246,
    28,  70,  97,  105, 52,  64,  126, 15,  85,  71,  163, 35,  221, 81,  175, 58,  195, 92,  249,
    206, 186, 197, 234, 38,  44,  83,  13,  110, 133, 40,  132, 9,   211, 223, 205, 244, 65,  129,
    77,  82,  106, 220, 55,  200, 108, 193, 171, 250, 36,  225, 123, 8,   12,  189, 177, 74,  120,
    136, 149, 139, 227, 99,  232, 109, 233, 203, 213, 254, 59,  0,   29,  57,  242, 239, 183, 14,
    102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,  49,  68,  80,  180, 143, 237, 31,
    26,  219, 153, 141, 51,  159, 17,  131, 20,
};

struct md2 {
    uint8_t x[48];   /* state (16) | block (16) | state ^ block (16) */
    uint8_t cks[16]; /* checksum */
    uint8_t l;       /* last checksum byte */
    unsigned n;      /* bytes in the current block */
};

static void md2_init(struct md2 *c)
{
    memset(c, 0, sizeof(*c));
}

static void md2_block(struct md2 *c)
{
    uint8_t t = 0;
    for (unsigned j = 0; j < 18; j++) {
        for (unsigned k = 0; k < 48; k++)
            t = c->x[k] ^= S[t];
        t = (uint8_t)(t + j);
    }
}

static void md2_byte(struct md2 *c, uint8_t b)
{
    c->x[16 + c->n] = b;
    c->x[32 + c->n] = c->x[c->n] ^ b;
    c->l = c->cks[c->n] ^= S[b ^ c->l];
    if (++c->n == 16) {
        c->n = 0;
        md2_block(c);
    }
}

static void md2_update(struct md2 *c, const void *msg, size_t len)
{
    const uint8_t *p = msg;
    for (size_t i = 0; i < len; i++)
        md2_byte(c, p[i]);
}

static void md2_final(struct md2 *c, uint8_t out[16])
{
    uint8_t pad = (uint8_t)(16 - c->n);
    for (unsigned i = 0; i < pad; i++)
        md2_byte(c, pad);
    uint8_t cks[16];
    memcpy(cks, c->cks, sizeof(cks));
    md2_update(c, cks, sizeof(cks));
    memcpy(out, c->x, 16);
}

void tf_md2(const void *msg, size_t len, uint8_t out[16])
{
    struct md2 c;
    md2_init(&c);
    md2_update(&c, msg, len);
    md2_final(&c, out);
}

static void md2_pad_key(struct md2 *c, const uint8_t key[16], uint8_t pad)
{
    for (unsigned i = 0; i < 16; i++)
        md2_byte(c, key[i] ^ pad);
}

void tf_hmac_md2(const uint8_t key[16], const void *msg, size_t len, uint8_t out[16])
{
    struct md2 c;
    uint8_t inner[16];
    md2_init(&c);
    md2_pad_key(&c, key, 0x36);
    md2_update(&c, msg, len);
    md2_final(&c, inner);
    md2_init(&c);
    md2_pad_key(&c, key, 0x5c);
    md2_update(&c, inner, sizeof(inner));
    md2_final(&c, out);
}

/* The key the runtime uses (a constant; the driver derives it at run time from a table). */
static const uint8_t KEY[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

static void put32(struct md2 *c, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        md2_byte(c, (uint8_t)(v >> 8 * i));
}

static void put64(struct md2 *c, uint64_t v)
{
    put32(c, (uint32_t)v);
    put32(c, (uint32_t)(v >> 32));
}

void tf_integrity_answer(const struct tf_integrity_in *in, const struct tf_integrity_dev *devs,
                         size_t ndev, uint64_t out[2])
{
    /* Runtimes x.y.0 and x.y.1 compare with fixed values. */
    if (in->version % 10 == 0 || in->version % 10 == 1) {
        out[0] = in->version % 10 == 0 ? 0x3341181C03CB675Cull : 0x1841181C03CB675Cull;
        out[1] = 0x8ED383AA1F4CD1E8ull;
        return;
    }
    struct md2 c;
    uint8_t inner[16], res[16];
    md2_init(&c);
    md2_pad_key(&c, KEY, 0x36);
    put32(&c, in->driver_version);
    put32(&c, in->version);
    put32(&c, in->pid);
    put32(&c, in->thread);
    put64(&c, in->cudart_table);
    put64(&c, in->integrity_table);
    put64(&c, in->fn);
    put64(&c, in->unix_seconds);
    for (size_t i = 0; i < ndev; i++) {
        md2_update(&c, devs[i].uuid, 16);
        put32(&c, (uint32_t)devs[i].pci_domain);
        put32(&c, (uint32_t)devs[i].pci_bus);
        put32(&c, (uint32_t)devs[i].pci_device);
    }
    md2_final(&c, inner);
    md2_init(&c);
    md2_pad_key(&c, KEY, 0x5c);
    md2_update(&c, inner, sizeof(inner));
    md2_final(&c, res);
    out[0] = out[1] = 0;
    for (unsigned i = 0; i < 8; i++) {
        out[0] |= (uint64_t)res[i] << 8 * i;
        out[1] |= (uint64_t)res[8 + i] << 8 * i;
    }
}
