/* Unit tests: lib/codec/json_reader.c
 *
 * RFC 8259 edge cases, error messages and offsets, number conversion (exactness against
 * strtod/strtof, halfway cases, subnormals, FP16/BF16 vectors computed with exact rational
 * arithmetic), integer range edges of every datatype, and isv__json_read_tensor. */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <float.h>

#include <cmocka.h>

#include "codec/json_next.h"
#include "codec/json_reader.h"
#include "sweep_rng.h"

/* FP16/BF16 expectations from exact rational rounding (generated with Python's fractions:
 * round-to-nearest-even of the exact decimal value). */
static const struct { const char *s; uint16_t f16, bf16; } half_vectors[] = {
  {"0", 0x0000, 0x0000},
  {"1", 0x3C00, 0x3F80},
  {"2049", 0x6800, 0x4500},
  {"2050", 0x6801, 0x4500},
  {"2051", 0x6802, 0x4500},
  {"2052", 0x6802, 0x4500},
  {"65504", 0x7BFF, 0x4780},
  {"65519", 0x7BFF, 0x4780},
  {"65519.999999999999999999", 0x7BFF, 0x4780},
  {"65520", 0x7C00, 0x4780},
  {"1e10", 0x7C00, 0x5015},
  {"5.9604644775390625e-08", 0x0001, 0x3380},
  {"2.98023223876953125e-08", 0x0000, 0x3300},
  {"2.98023223876953125000000001e-08", 0x0001, 0x3300},
  {"2.98023223876953124999999999e-08", 0x0000, 0x3300},
  {"8.940696716308594e-08", 0x0002, 0x33C0},
  {"1.00048828125", 0x3C00, 0x3F80},
  {"1.00048828125000000001", 0x3C01, 0x3F80},
  {"1.000488281249999999999", 0x3C00, 0x3F80},
  {"1.00146484375", 0x3C02, 0x3F80},
  {"1.00390625", 0x3C04, 0x3F80},
  {"1.00390625000000000001", 0x3C04, 0x3F81},
  {"1.01171875", 0x3C0C, 0x3F82},
  {"0.1", 0x2E66, 0x3DCD},
  {"0.2", 0x3266, 0x3E4D},
  {"0.3", 0x34CD, 0x3E9A},
  {"3.14159", 0x4248, 0x4049},
  {"-2.5", 0xC100, 0xC020},
  {"6.103515625e-05", 0x0400, 0x3880},
  {"6.1e-05", 0x03FF, 0x3880},
  {"3.3895313892515355e38", 0x7C00, 0x7F7F},
  {"3.3961e38", 0x7C00, 0x7F7F},
  {"3.39e38", 0x7C00, 0x7F7F},
  {"9.183549615799121e-41", 0x0000, 0x0001},
  {"4.591774807899561e-41", 0x0000, 0x0001},
  {"4.5917748078995606e-41", 0x0000, 0x0001},
  {"1e-50", 0x0000, 0x0000},
  {"1e39", 0x7C00, 0x7F80},
  {"123456789012345678901234567890", 0x7C00, 0x6FC7},
  {"0.000000000000000000000000000000000000000091835496157991211560057541970791", 0x0000, 0x0001},
  {"-0.0001", 0x868E, 0xB8D2},
  {"65503.99999", 0x7BFF, 0x4780},
  {"1.0009765625", 0x3C01, 0x3F80},
  {"1.00000000000000000000000000000000000000000000000000000000001", 0x3C00, 0x3F80},
  {"74607e-42", 0x0000, 0x01CB},
  {"508e7", 0x7C00, 0x4F97},
  {"4061120597437249536030359e-38", 0x0000, 0x2937},
  {"915e-1", 0x55B8, 0x42B7},
  {"14151560559444937094e39", 0x7C00, 0x7F80},
  {"96843464e-21", 0x0000, 0x29DA},
  {"924e-10", 0x0002, 0x33C6},
  {"27e33", 0x7C00, 0x78A6},
  {"962e-2", 0x48CF, 0x411A},
  {"55328e-47", 0x0000, 0x0000},
  {"57395e13", 0x7C00, 0x5CFF},
  {"45312e-21", 0x0000, 0x2451},
  {"99739e8", 0x7C00, 0x5511},
  {"2884300e3", 0x7C00, 0x4F2C},
  {"11848239804822359221e-27", 0x0000, 0x324C},
  {"2338351639709347626710206e-8", 0x7C00, 0x5AA6},
  {"9686878047623399034261327e4", 0x7C00, 0x6F9C},
  {"5496434353852012935380470e25", 0x7C00, 0x7F80},
  {"431666907078e25", 0x7C00, 0x7C50},
  {"492e-19", 0x0000, 0x2463},
  {"731923905398e-28", 0x0000, 0x24A9},
  {"50511159906244696684e-39", 0x0000, 0x1F6F},
  {"9472040981905223151541690e-47", 0x0000, 0x1AE5},
  {"316e40", 0x7C00, 0x7F80},
  {"66005695180054389646e32", 0x7C00, 0x7F80},
  {"65830e-21", 0x0000, 0x2498},
  {"70729e20", 0x7C00, 0x68BB},
  {"380163754538e23", 0x7C00, 0x78EA},
  {"295965144162e34", 0x7C00, 0x7F80},
  {"13455058590201385606e-1", 0x7C00, 0x5D95},
  {"2500046810074324420211225e16", 0x7C00, 0x7F80},
  {"84301608166080075629e-25", 0x008D, 0x370D},
  {"44538271202706626116e-50", 0x0000, 0x0D11},
  {"88294314532690264362e-8", 0x7C00, 0x534E},
  {"33288431429799730755e31", 0x7C00, 0x7F80},
  {"88515575113598578829e-18", 0x5588, 0x42B1},
  {"281634798126076453574231e-15", 0x7C00, 0x4D86},
  {"14695315e29", 0x7C00, 0x7B8E},
  {"38961303e-42", 0x0000, 0x064F},
  {"33452e17", 0x7C00, 0x6335},
  {"86070e-16", 0x0000, 0x2D17},
  {"9164056466605197327512868e-36", 0x0000, 0x2D21},
  {"51882817e-7", 0x4530, 0x40A6},
  {"33872e-37", 0x0000, 0x098D},
  {"4044411315569672605595115e27", 0x7C00, 0x7F80},
  {"231e-48", 0x0000, 0x0000},
  {"4631e-30", 0x0000, 0x13B7},
  {"8252901341272321138982056e19", 0x7C00, 0x7F80},
  {"82677e38", 0x7C00, 0x7F80},
  {"576484236225e33", 0x7C00, 0x7F80},
  {"634258877016e-9", 0x60F5, 0x441F},
  {"917630987958858055304000e-11", 0x7C00, 0x5506},
  {"318e-12", 0x0000, 0x2FAF},
  {"54549e22", 0x7C00, 0x6BE2},
  {"1112e21", 0x7C00, 0x676B},
  {"605e-23", 0x0000, 0x1DE5},
  {"86773911005525128743e15", 0x7C00, 0x7986},
  {"378817865534e-38", 0x0000, 0x1396},
  {"71878951090963958454e25", 0x7C00, 0x7F80},
  {"428062028108e-13", 0x297B, 0x3D2F},
  {"356556159862e28", 0x7C00, 0x7F80},
  {"313101734070e-48", 0x0000, 0x02D5},
  {"42958e22", 0x7C00, 0x6BB2},
  {"44446e4", 0x7C00, 0x4DD4},
  {"90523828e-38", 0x0000, 0x0D93},
  {"605299136134e-6", 0x7C00, 0x4914},
  {"4538609841675160655643775e-42", 0x0000, 0x22A7},
  {"87e-33", 0x0000, 0x0BE2},
  {"70545e-23", 0x0000, 0x2150},
  {"80558666e14", 0x7C00, 0x63DA},
  {"49406620e-7", 0x44F1, 0x409E},
  {"299e-20", 0x0000, 0x225D},
  {"27463380247288991317e24", 0x7C00, 0x7F80},
  {"329e-45", 0x0000, 0x0000},
  {"390e-32", 0x0000, 0x0E9E},
  {"44683e-36", 0x0000, 0x0B68},
  {"72424969063996511626e-41", 0x0000, 0x1C5B},
  {"10440239498016412500e-16", 0x6414, 0x4483},
  {"75758772e18", 0x7C00, 0x6A7B},
  {"469e-15", 0x0000, 0x2B04},
  {"848e-13", 0x0000, 0x2EBA},
  {"268366125222336747e2", 0x7C00, 0x5FBA},
  {"193e-20", 0x0000, 0x220E},
  {"2988738511823670262e7", 0x7C00, 0x69C6},
  {"8416107519656305481689271e-2", 0x7C00, 0x658F},
  {"51989383214111314458e20", 0x7C00, 0x7F80},
  {"1936784801289359140410733e-24", 0x3FBF, 0x3FF8},
  {"5317736e-47", 0x0000, 0x0001},
  {"97506996e26", 0x7C00, 0x77F0},
  {"345277871485e1", 0x7C00, 0x5449},
  {"936e-10", 0x0002, 0x33C9},
  {"275356204447e-23", 0x0000, 0x2C42},
  {"49102178480701515226e-17", 0x5FAC, 0x43F6},
  {"24115818150445239471e-19", 0x40D3, 0x401A},
  {"840e-15", 0x0000, 0x2B6C},
  {"713353216019e23", 0x7C00, 0x795C},
  {"30524633e-1", 0x7C00, 0x4A3A},
  {"5509941e-9", 0x1DA4, 0x3BB5},
  {"77712955e-12", 0x0518, 0x38A3},
  {"13548961e19", 0x7C00, 0x6AE0},
  {"10993568521043886523e-19", 0x3C66, 0x3F8D},
  {"828e-19", 0x0000, 0x24BF},
  {"275e20", 0x7C00, 0x64BA},
  {"747e-41", 0x0000, 0x0051},
  {"9541050042459518275460809e10", 0x7C00, 0x7993},
  {"13230e14", 0x7C00, 0x5D93},
  {"10349125e15", 0x7C00, 0x640C},
  {"2737754796333588430832049e-10", 0x7C00, 0x5779},
  {"727e15", 0x7C00, 0x5D21},
  {"76400522921077699310e-46", 0x0000, 0x1417},
  {"83688455e36", 0x7C00, 0x7F80},
  {"31167529948398734176e-28", 0x0000, 0x3156},
  {"174107203752e-44", 0x0000, 0x0911},
  {"8320732418725396157733468e20", 0x7C00, 0x7F80},
  {"89490554179005739189e8", 0x7C00, 0x6DE7},
  {"372959029984e-29", 0x0000, 0x228A},
  {"871983194807e32", 0x7C00, 0x7F80},
  {"631258453327e-48", 0x0000, 0x0357},
  {"2674807037845324636721874e25", 0x7C00, 0x7F80},
  {"33963e-15", 0x0000, 0x2E15},
  {"8.41015625", 0x4834, 0x4107},
  {"8.410156250000000001", 0x4835, 0x4107},
  {"8.4101562499999999", 0x4834, 0x4107},
  {"0.22943115234375", 0x3358, 0x3E6B},
  {"0.229431152343750000000001", 0x3358, 0x3E6B},
  {"0.2294311523437499999999", 0x3357, 0x3E6B},
  {"0.001474857330322265625", 0x160A, 0x3AC1},
  {"0.0014748573303222656250000000001", 0x160B, 0x3AC1},
  {"0.00147485733032226562499999999", 0x160A, 0x3AC1},
  {"25.5859375", 0x4E66, 0x41CD},
  {"25.58593750000000001", 0x4E66, 0x41CD},
  {"25.585937499999999", 0x4E65, 0x41CD},
  {"0.000226676464080810546875", 0x0B6E, 0x396E},
  {"0.0002266764640808105468750000000001", 0x0B6E, 0x396E},
  {"0.00022667646408081054687499999999", 0x0B6D, 0x396E},
  {"0.0057582855224609375", 0x1DE6, 0x3BBD},
  {"0.00575828552246093750000000001", 0x1DE6, 0x3BBD},
  {"0.005758285522460937499999999", 0x1DE5, 0x3BBD},
  {"1.55322265625", 0x3E36, 0x3FC7},
  {"1.553222656250000000001", 0x3E37, 0x3FC7},
  {"1.5532226562499999999", 0x3E36, 0x3FC7},
  {"0.0000146925449371337890625", 0x00F6, 0x3776},
  {"0.00001469254493713378906250000000001", 0x00F7, 0x3777},
  {"0.000014692544937133789062499999999", 0x00F6, 0x3776},
  {"0.001643657684326171875", 0x16BC, 0x3AD7},
  {"0.0016436576843261718750000000001", 0x16BC, 0x3AD7},
  {"0.00164365768432617187499999999", 0x16BB, 0x3AD7},
  {"3.8388671875", 0x43AE, 0x4076},
  {"3.83886718750000000001", 0x43AE, 0x4076},
  {"3.838867187499999999", 0x43AD, 0x4076},
  {"0.0360260009765625", 0x289C, 0x3D14},
  {"0.03602600097656250000000001", 0x289D, 0x3D14},
  {"0.036026000976562499999999", 0x289C, 0x3D14},
  {"2.0595703125", 0x401E, 0x4004},
  {"2.05957031250000000001", 0x401F, 0x4004},
  {"2.059570312499999999", 0x401E, 0x4004},
  {"12924", 0x7250, 0x464A},
  {"129240000000001", 0x7C00, 0x56EB},
  {"56.453125", 0x530E, 0x4262},
  {"56.4531250000000001", 0x530F, 0x4262},
  {"56.45312499999999", 0x530E, 0x4262},
  {"23832", 0x75D2, 0x46BA},
  {"238320000000001", 0x7C00, 0x5759},
  {"0.513427734375", 0x381C, 0x3F03},
  {"0.5134277343750000000001", 0x381C, 0x3F03},
  {"0.51342773437499999999", 0x381B, 0x3F03},
  {"28904", 0x770E, 0x46E2},
  {"289040000000001", 0x7C00, 0x5783},
  {"126.03125", 0x57E0, 0x42FC},
  {"126.031250000000001", 0x57E1, 0x42FC},
  {"126.0312499999999", 0x57E0, 0x42FC},
  {"46.484375", 0x51D0, 0x423A},
  {"46.4843750000000001", 0x51D0, 0x423A},
  {"46.48437499999999", 0x51CF, 0x423A},
  {"360.125", 0x5DA0, 0x43B4},
  {"360.1250000000001", 0x5DA1, 0x43B4},
  {"360.12499999999", 0x5DA0, 0x43B4},
  {"0.0047817230224609375", 0x1CE6, 0x3B9D},
  {"0.00478172302246093750000000001", 0x1CE6, 0x3B9D},
  {"0.004781723022460937499999999", 0x1CE5, 0x3B9D},
  {"0.0063648223876953125", 0x1E84, 0x3BD1},
  {"0.00636482238769531250000000001", 0x1E85, 0x3BD1},
  {"0.006364822387695312499999999", 0x1E84, 0x3BD1},
  {"0.0317535400390625", 0x2810, 0x3D02},
  {"0.03175354003906250000000001", 0x2811, 0x3D02},
  {"0.031753540039062499999999", 0x2810, 0x3D02},
  {"1.84326171875", 0x3F60, 0x3FEC},
  {"1.843261718750000000001", 0x3F60, 0x3FEC},
  {"1.8432617187499999999", 0x3F5F, 0x3FEC},
  {"126.90625", 0x57EE, 0x42FE},
  {"126.906250000000001", 0x57EF, 0x42FE},
  {"126.9062499999999", 0x57EE, 0x42FE},
  {"1.32373046875", 0x3D4C, 0x3FA9},
  {"1.323730468750000000001", 0x3D4C, 0x3FA9},
  {"1.3237304687499999999", 0x3D4B, 0x3FA9},
  {"52752", 0x7A70, 0x474E},
  {"527520000000001", 0x7C00, 0x57F0},
  {"0.0046977996826171875", 0x1CD0, 0x3B9A},
  {"0.00469779968261718750000000001", 0x1CD0, 0x3B9A},
  {"0.004697799682617187499999999", 0x1CCF, 0x3B9A},
  {"231.9375", 0x5B40, 0x4368},
  {"231.93750000000001", 0x5B40, 0x4368},
  {"231.937499999999", 0x5B3F, 0x4368},
  {"0.2982177734375", 0x34C6, 0x3E99},
  {"0.29821777343750000000001", 0x34C6, 0x3E99},
  {"0.298217773437499999999", 0x34C5, 0x3E99},
  {"0.0557403564453125", 0x2B22, 0x3D64},
  {"0.05574035644531250000000001", 0x2B23, 0x3D64},
  {"0.055740356445312499999999", 0x2B22, 0x3D64},
  {"7.736328125", 0x47BC, 0x40F8},
  {"7.7363281250000000001", 0x47BD, 0x40F8},
  {"7.73632812499999999", 0x47BC, 0x40F8},
  {"24.9921875", 0x4E40, 0x41C8},
  {"24.99218750000000001", 0x4E40, 0x41C8},
  {"24.992187499999999", 0x4E3F, 0x41C8},
  {"16760", 0x7418, 0x4683},
  {"167600000000001", 0x7C00, 0x5718},
  {"333.875", 0x5D38, 0x43A7},
  {"333.8750000000001", 0x5D38, 0x43A7},
  {"333.87499999999", 0x5D37, 0x43A7},
  {"22408", 0x7578, 0x46AF},
  {"224080000000001", 0x7C00, 0x574C},
  {"61.109375", 0x53A4, 0x4274},
  {"61.1093750000000001", 0x53A4, 0x4274},
  {"61.10937499999999", 0x53A3, 0x4274},
  {"0.014125823974609375", 0x233C, 0x3C67},
  {"0.0141258239746093750000000001", 0x233C, 0x3C67},
  {"0.01412582397460937499999999", 0x233B, 0x3C67},
  {"53.953125", 0x52BE, 0x4258},
  {"53.9531250000000001", 0x52BF, 0x4258},
  {"53.95312499999999", 0x52BE, 0x4258},
  {"0.0039997100830078125", 0x1C18, 0x3B83},
  {"0.00399971008300781250000000001", 0x1C19, 0x3B83},
  {"0.003999710083007812499999999", 0x1C18, 0x3B83},
  {"0.0000942051410675048828125", 0x062C, 0x38C6},
  {"0.00009420514106750488281250000000001", 0x062D, 0x38C6},
  {"0.000094205141067504882812499999999", 0x062C, 0x38C6},
  {"24456", 0x75F8, 0x46BF},
  {"244560000000001", 0x7C00, 0x575E},
  {"0.000157535076141357421875", 0x092A, 0x3925},
  {"0.0001575350761413574218750000000001", 0x092A, 0x3925},
  {"0.00015753507614135742187499999999", 0x0929, 0x3925},
  {"728.75", 0x61B2, 0x4436},
  {"728.750000000001", 0x61B2, 0x4436},
  {"728.7499999999", 0x61B1, 0x4436},
  {"2.7509765625", 0x4180, 0x4030},
  {"2.75097656250000000001", 0x4181, 0x4030},
  {"2.750976562499999999", 0x4180, 0x4030},
  {"52.796875", 0x529A, 0x4253},
  {"52.7968750000000001", 0x529A, 0x4253},
  {"52.79687499999999", 0x5299, 0x4253},
  {"8836", 0x7050, 0x460A},
  {"88360000000001", 0x7C00, 0x56A1},
  {"0.112457275390625", 0x2F32, 0x3DE6},
  {"0.1124572753906250000000001", 0x2F33, 0x3DE6},
  {"0.11245727539062499999999", 0x2F32, 0x3DE6},
  {"0.001078128814697265625", 0x146A, 0x3A8D},
  {"0.0010781288146972656250000000001", 0x146B, 0x3A8D},
  {"0.00107812881469726562499999999", 0x146A, 0x3A8D},
  {"2.7470703125", 0x417E, 0x4030},
  {"2.74707031250000000001", 0x417F, 0x4030},
  {"2.747070312499999999", 0x417E, 0x4030},
  {"775.25", 0x620E, 0x4442},
  {"775.250000000001", 0x620F, 0x4442},
  {"775.2499999999", 0x620E, 0x4442},
  {"1392.5", 0x6570, 0x44AE},
  {"1392.50000000001", 0x6571, 0x44AE},
  {"1392.499999999", 0x6570, 0x44AE},
  {"10300", 0x7108, 0x4621},
  {"103000000000001", 0x7C00, 0x56BB},
  {"0.00297641754150390625", 0x1A18, 0x3B43},
  {"0.002976417541503906250000000001", 0x1A19, 0x3B43},
  {"0.0029764175415039062499999999", 0x1A18, 0x3B43},
  {"0.03092193603515625", 0x27EA, 0x3CFD},
  {"0.030921936035156250000000001", 0x27EB, 0x3CFD},
  {"0.0309219360351562499999999", 0x27EA, 0x3CFD},
  {"0.02437591552734375", 0x263E, 0x3CC8},
  {"0.024375915527343750000000001", 0x263E, 0x3CC8},
  {"0.0243759155273437499999999", 0x263D, 0x3CC8},
  {"148.8125", 0x58A6, 0x4315},
  {"148.81250000000001", 0x58A7, 0x4315},
  {"148.812499999999", 0x58A6, 0x4315},
  {"0.02480316162109375", 0x265A, 0x3CCB},
  {"0.024803161621093750000000001", 0x265A, 0x3CCB},
  {"0.0248031616210937499999999", 0x2659, 0x3CCB},
  {"4786", 0x6CAC, 0x4596},
  {"47860000000001", 0x7C00, 0x562E},
  {"6.701171875", 0x46B4, 0x40D6},
  {"6.7011718750000000001", 0x46B4, 0x40D6},
  {"6.70117187499999999", 0x46B3, 0x40D6},
};

/* ---- helpers ------------------------------------------------------------------------------ */
static char g_buf[1 << 16];

static isv__json_reader *reader_for(const char *json, size_t len, unsigned depth) {
  static isv__json_reader r;
  assert_true(len < sizeof g_buf);
  memcpy(g_buf, json, len);
  isv__json_reader_init(&r, g_buf, len, depth);
  return &r;
}

/* Read every token; returns NULL when the document is valid, else the error message. */
static const char *parse_n(const char *json, size_t len, unsigned depth, size_t *off) {
  isv__json_reader *r = reader_for(json, len, depth);
  isv__json_token t;
  for (int i = 0; i < 100000; i++) {
    isv__json_type ty = isv__json_next(r, &t);
    if (ty == ISV__JSON_EOF) return NULL;
    if (ty == ISV__JSON_ERROR) {
      const char *e = isv__json_error(r, off);
      assert_non_null(e);
      return e;
    }
  }
  fail_msg("too many tokens");
  return NULL;
}
static const char *parse(const char *json) { return parse_n(json, strlen(json), 64, NULL); }

static void expect_error(const char *json, const char *substr, size_t offset) {
  size_t off = (size_t)-1;
  const char *e = parse_n(json, strlen(json), 64, &off);
  if (!e) fail_msg("accepted invalid JSON: %s", json);
  if (substr && !strstr(e, substr)) fail_msg("for %s: message \"%s\" lacks \"%s\"", json, e, substr);
  char want[48];
  snprintf(want, sizeof want, "offset %zu", offset);
  if (offset != (size_t)-1) {
    if (off != offset) fail_msg("for %s: offset %zu, want %zu (%s)", json, off, offset, e);
    if (!strstr(e, want)) fail_msg("for %s: message \"%s\" lacks \"%s\"", json, e, want);
  }
}

static isv__json_token num_tok(const char *s) {
  isv__json_token t = {ISV__JSON_NUMBER, s, strlen(s), 0};
  return t;
}

static double to_d(const char *s) {
  isv__json_token t = num_tok(s);
  double d;
  assert_int_equal(isv__json_to_double(&t, &d), 0);
  return d;
}
static float to_f(const char *s) {
  isv__json_token t = num_tok(s);
  float f;
  assert_int_equal(isv__json_to_float(&t, &f), 0);
  return f;
}
static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* ---- grammar ------------------------------------------------------------------------------ */
static void test_valid_documents(void **state) {
  (void)state;
  static const char *const ok[] = {
      "{}", "[]", "0", "-0", "0.0", "-0.0e-0", "1", "-1", "1.5", "1e5", "1E5", "1e+5", "1e-5",
      "123456789012345678901234567890", "1.7976931348623157e308", "\"\"", "\"abc\"", "true",
      "false", "null", "NaN", "Infinity", "-Infinity", " \t\r\n[ 1 , 2 ]\n ", "[[[]]]",
      "{\"a\":{\"b\":[1,{\"c\":null}]}}", "{\"\":0}", "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\"]",
      "\"\\uD83D\\uDE00\"", "\"\xF0\x9F\x98\x80 caf\xC3\xA9\"", "\"\\u0000\"", "[NaN,Infinity,-Infinity]",
      "{\"a\":1,\"a\":2}", "[1e999, -1e-999]", "\"\x7F\"",
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    const char *e = parse(ok[i]);
    if (e) fail_msg("rejected %s: %s", ok[i], e);
  }
}

static void test_invalid_documents(void **state) {
  (void)state;
  expect_error("", "unexpected end of input", 0);
  expect_error("   ", "unexpected end of input", 3);
  expect_error("[1,]", "trailing comma before ']'", 3);
  expect_error("{\"a\":1,}", "trailing comma before '}'", 7);
  expect_error("[1,,2]", "unexpected ','", 3);
  expect_error("[1 2]", "unexpected '2'", 3);
  expect_error("{\"a\" 1}", "expected ':'", 5);
  expect_error("{\"a\":1 \"b\":2}", "unexpected '\"'", 7);
  expect_error("{1:2}", "an object key", 1);
  expect_error("{\"a\"}", "unexpected '}'", 4);
  expect_error("[1]]", "after the top-level value", 3);
  expect_error("[1] x", "unexpected 'x'", 4);
  expect_error("1 2", "after the top-level value", 2);
  expect_error("[", "unexpected end of input", 1);
  expect_error("{", "unexpected end of input", 1);
  expect_error("[1", "unexpected end of input", 2);
  expect_error("]", "unexpected ']'", 0);
  expect_error("01", "leading zero", 0);
  expect_error("-01", "leading zero", 1);
  expect_error("[00]", "leading zero", 1);
  expect_error("1.", "expected a digit after '.'", 2);
  expect_error("1.e5", "expected a digit after '.'", 2);
  expect_error(".5", "unexpected '.'", 0);
  expect_error("1e", "exponent", 2);
  expect_error("1e+", "exponent", 3);
  expect_error("+1", "unexpected '+'", 0);
  expect_error("-", "invalid number", 0);
  expect_error("- 1", "invalid number", 0);
  expect_error("tru", "invalid literal", 0);
  expect_error("nul", "invalid literal", 0);
  expect_error("True", "unexpected 'T'", 0);
  expect_error("-NaN", "invalid number", 0);
  expect_error("nan", "invalid literal", 0);
  expect_error("infinity", "unexpected 'i'", 0);
  expect_error("Inf", "invalid number", 0);
  expect_error("[1,2,]", "trailing comma", 5);
  expect_error("\"abc", "unterminated string", 0);
  expect_error("[\"abc]", "unterminated string", 1);
  expect_error("\"a\x01z\"", "control character 0x01", 2);
  expect_error("\"a\tb\"", "control character 0x09", 2);
  expect_error("\"a\nb\"", "control character 0x0A", 2);
  expect_error("\"\\q\"", "invalid escape \\q in string", 1);
  expect_error("\"ab\\x41\"", "invalid escape \\x", 3);
  expect_error("\"\\'\"", "invalid escape \\'", 1);
  expect_error("\"\\u12\"", "invalid \\u escape", 1);
  expect_error("\"\\u12G4\"", "invalid \\u escape", 1);
  expect_error("\"\\uD800\"", "lone surrogate \\uD800", 1);
  expect_error("\"\\uDC00\"", "lone surrogate \\uDC00", 1);
  expect_error("\"\\uD800\\u0041\"", "lone surrogate", 1);
  expect_error("\"\\uD800\\uD800\"", "lone surrogate", 1);
  expect_error("\"x\\uDBFFz\"", "lone surrogate", 2);
  expect_error("\"\xC0\x80\"", "invalid UTF-8", 1);
  expect_error("\"ok\xED\xA0\x80\"", "invalid UTF-8", 3);
  expect_error("\"\xF4\x90\x80\x80\"", "invalid UTF-8", 1);
  expect_error("\"\xE2\x82\"", "invalid UTF-8", 1);
  expect_error("\xEF\xBB\xBF[]", "unexpected byte 0xEF", 0); /* no BOM */
  expect_error("/* c */ 1", "unexpected '/'", 0);
  expect_error("[1] // c", "unexpected '/'", 4);
  expect_error("'a'", "unexpected '''", 0);
  expect_error("{'a':1}", "an object key", 1);
  expect_error("{\"a\":}", "unexpected '}'", 5);
  expect_error("[0x10]", "unexpected 'x'", 2);
  expect_error("[1.5.3]", "unexpected '.'", 4);
  expect_error("[truex]", "unexpected 'x'", 5);
  expect_error("\"\\", "unterminated string", 0);
  /* NUL bytes inside the buffer */
  size_t off;
  assert_non_null(parse_n("[1,\0]", 5, 64, &off));
  assert_int_equal(off, 3);
  assert_non_null(strstr(parse_n("[1,\0]", 5, 64, &off), "unexpected byte 0x00 at offset 3"));
  const char *e = parse_n("[1]\0", 4, 64, &off);
  assert_non_null(e);
  assert_int_equal(off, 3);
}

static void test_error_is_sticky_and_first_kept(void **state) {
  (void)state;
  isv__json_reader *r = reader_for("[1,]", 4, 8);
  isv__json_token t;
  while (isv__json_next(r, &t) != ISV__JSON_ERROR) {
  }
  size_t off;
  const char *e = isv__json_error(r, &off);
  assert_non_null(e);
  assert_int_equal(off, 3);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ERROR);
  assert_int_equal(isv__json_fail(r, 0, "later %d", 1), -1);
  assert_non_null(strstr(isv__json_error(r, NULL), "trailing comma"));

  r = reader_for("{\"k\":true}", 10, 8);
  assert_null(isv__json_error(r, NULL));
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_OBJECT_BEGIN);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_KEY);
  assert_int_equal(isv__json_fail(r, t.offset, "unknown key \"%.*s\"", (int)t.len, t.ptr), -1);
  assert_string_equal(isv__json_error(r, &off), "unknown key \"k\" at offset 1");
  assert_int_equal(off, 1);
}

static void test_depth_limit(void **state) {
  (void)state;
  assert_null(parse_n("[[[[1]]]]", 9, 4, NULL));
  size_t off;
  const char *e = parse_n("[[[[[1]]]]]", 11, 4, &off);
  assert_non_null(e);
  assert_non_null(strstr(e, "nesting deeper than 4"));
  assert_int_equal(off, 4);
  e = parse_n("{\"a\":{\"b\":[1]}}", 15, 2, &off);
  assert_non_null(e);
  assert_int_equal(off, 10);
  /* max_depth is clamped to [1, ISV__JSON_MAX_DEPTH_LIMIT] */
  assert_null(parse_n("[1]", 3, 0, NULL));
  assert_non_null(parse_n("[[1]]", 5, 0, NULL));
  static char deep[2 * 1100 + 1];
  for (int n = ISV__JSON_MAX_DEPTH_LIMIT; n <= 1100; n += 1100 - ISV__JSON_MAX_DEPTH_LIMIT) {
    for (int i = 0; i < n; i++) {
      deep[i] = '[';
      deep[2 * n - 1 - i] = ']';
    }
    e = parse_n(deep, 2 * (size_t)n, 100000, &off);
    if (n == ISV__JSON_MAX_DEPTH_LIMIT) assert_null(e); /* exactly the limit */
  }
  assert_non_null(e);
  assert_int_equal(off, ISV__JSON_MAX_DEPTH_LIMIT);
}

static void test_tokens_and_offsets(void **state) {
  (void)state;
  const char *doc = "{\"a\" : [1, -2.5e3, \"x\\ny\", true, false, null, NaN], \"b\":{}}";
  isv__json_reader *r = reader_for(doc, strlen(doc), 16);
  struct {
    isv__json_type t;
    const char *text;
    size_t off;
  } want[] = {
      {ISV__JSON_OBJECT_BEGIN, "{", 0}, {ISV__JSON_KEY, "a", 1},         {ISV__JSON_ARRAY_BEGIN, "[", 7},
      {ISV__JSON_NUMBER, "1", 8},       {ISV__JSON_NUMBER, "-2.5e3", 11}, {ISV__JSON_STRING, "x\ny", 19},
      {ISV__JSON_TRUE, "true", 27},     {ISV__JSON_FALSE, "false", 33},   {ISV__JSON_NULL, "null", 40},
      {ISV__JSON_NUMBER, "NaN", 46},    {ISV__JSON_ARRAY_END, "]", 49},   {ISV__JSON_KEY, "b", 52},
      {ISV__JSON_OBJECT_BEGIN, "{", 56}, {ISV__JSON_OBJECT_END, "}", 57}, {ISV__JSON_OBJECT_END, "}", 58},
  };
  isv__json_token t;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_int_equal(isv__json_next(r, &t), want[i].t);
    assert_int_equal(t.type, want[i].t);
    assert_int_equal(t.offset, want[i].off);
    assert_int_equal(t.len, strlen(want[i].text));
    assert_memory_equal(t.ptr, want[i].text, t.len);
  }
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_EOF);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_EOF);
  assert_int_equal(r->depth, 0);
}

/* Compact documents take isv__json_next's short paths (a key after '{' or ',', a plain string,
 * a bracket), and so do those spaced as json.dumps writes them (a space after every ',' and
 * ':'); the same with a space after every '[' and '{' too take next_impl's general walk there:
 * all must give the same tokens, and the compact forms of errors the same messages. */
static size_t spaced_as(const char *in, char *out, int brackets_too) {
  size_t n = 0;
  int in_str = 0;
  for (const char *p = in; *p; p++) {
    out[n++] = *p;
    if (in_str) {
      if (*p == '\\' && p[1]) out[n++] = *++p;
      else if (*p == '"') in_str = 0;
    } else if (*p == '"') {
      in_str = 1;
    } else if (*p == ',' || *p == ':' || (brackets_too && (*p == '[' || *p == '{'))) {
      out[n++] = ' ';
    }
  }
  out[n] = '\0';
  return n;
}

static void test_compact_and_spaced_tokens_agree(void **state) {
  (void)state;
  static const char *const docs[] = {
      "{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,2],\"datatype\":\"INT32\",\"data\":[1,2]},"
      "{\"name\":\"b\",\"parameters\":{\"x\":\"y\",\"z\":true}}],\"outputs\":[]}",
      "[\"a\",\"b\",[\"c\",{}],{\"d\":[\"e\"]},[],\"\"]", "{\"k\\n\":\"v\\u0041\",\"k2\":[\"\\\"\"]}",
      "[[[[\"deep\"]]],{\"a\":{\"b\":{\"c\":\"d\"}}}]", "\"top\"", "{\"a\":\"caf\xC3\xA9\",\"\":\"\"}",
      "[{},{},[],[]]", "{\"a\":[1,\"two\",null,{\"b\":false}]}",
  };
  static char a[512], b[1024];
  for (size_t j = 0; j < 2 * sizeof docs / sizeof docs[0]; j++) {
    size_t i = j / 2;
    size_t na = strlen(docs[i]), nb = spaced_as(docs[i], b, (int)(j % 2));
    memcpy(a, docs[i], na);
    isv__json_reader ra, rb;
    isv__json_reader_init(&ra, a, na, 8);
    isv__json_reader_init(&rb, b, nb, 8);
    for (int k = 0;; k++) {
      isv__json_token ta, tb;
      isv__json_type ya = isv__json_next(&ra, &ta), yb = isv__json_next(&rb, &tb);
      if (ya != yb || ta.len != tb.len || (ta.len && memcmp(ta.ptr, tb.ptr, ta.len) != 0))
        fail_msg("%s: token %d differs (%d '%.*s' against %d '%.*s')", docs[i], k, ya, (int)ta.len,
                 ta.ptr ? ta.ptr : "", yb, (int)tb.len, tb.ptr ? tb.ptr : "");
      if (ya == ISV__JSON_EOF) break;
      assert_int_not_equal(ya, ISV__JSON_ERROR);
      assert_int_equal(a[ta.offset], b[tb.offset]); /* each offset at the token's first byte */
      assert_int_equal(ra.depth, rb.depth);
    }
  }
  /* errors met on the short paths: the ',' they take, the brackets they open and close, and
   * the one space they take after a ',' or a ':' */
  expect_error("[\"a\", ]", "trailing comma before ']'", 6);
  expect_error("{\"a\": \"b\", }", "trailing comma before '}'", 11);
  expect_error("{\"a\": \"b\", \"c\"}", "expected ':'", 14);
  expect_error("{\"a\": \"b\", ", "unexpected end of input", 11);
  expect_error("{\"a\": ", "unexpected end of input", 6);
  expect_error("[\"a\", , \"b\"]", "unexpected ','", 6);
  expect_error("{\"a\": }", "expected a value", 6);
  expect_error("[\"a\",]", "trailing comma before ']'", 5);
  expect_error("{\"a\":\"b\",}", "trailing comma before '}'", 9);
  expect_error("{\"a\":\"b\",\"c\"}", "expected ':'", 12);
  expect_error("{\"a\":\"b\",\"c\"", "expected ':'", 12);
  expect_error("[\"a\",", "unexpected end of input", 5);
  expect_error("[\"a\",,\"b\"]", "unexpected ','", 5);
  expect_error("[\"a\"}", "expected ',' or ']'", 4);
  expect_error("{\"a\":\"b\"]", "expected ',' or '}'", 8);
  expect_error("[\"a\"]\"b\"", "after the top-level value", 5);
  expect_error("[\"a\x01\"]", "control character", 3);
  expect_error("{\"a\x01\":1}", "control character", 3);
  size_t off = 0;
  const char *e = parse_n("[[[{\"x\":1}]]]", 13, 3, &off);
  assert_non_null(e);
  assert_non_null(strstr(e, "nesting deeper than 3"));
  assert_int_equal(off, 3);
  assert_null(parse_n("[[{\"x\":1}]]", 11, 3, &off));
}

/* isv__json_key_in takes a compact key of its set at once, or reads nothing: a reader asking
 * it before every token and one reading token by token agree on every key taken (the same
 * name), on where each stands after it (position, state, depth) and on the end (the same
 * error or none) — over keys of the set and others, escaped, spaced, in arrays, cut short. */
static void test_key_in_takes_compact_keys_or_nothing(void **state) {
  (void)state;
  static const isv__json_key_lit keys[] = {ISV__JSON_KEY_LIT("name"), ISV__JSON_KEY_LIT("datatype"),
                                           ISV__JSON_KEY_LIT("shape"), ISV__JSON_KEY_LIT("data"),
                                           ISV__JSON_KEY_LIT("parameters")};
  static const char *const docs[] = {
      "{\"name\":\"a\",\"datatype\":\"x\",\"data\":[1],\"shape\":[2],\"parameters\":{\"name\":1}}",
      "{\"names\":1,\"nam\":2,\"dat\":3,\"data\" :4, \"shape\":5,\n\"name\":6}",
      "{\"na\\u006de\":1,\"data\":[{\"data\":{}}]}", "[\"name\",{\"name\":1},[\"data\"]]",
      "[\"name\":1]", "[1,\"name\":2]", "{\"name\":1,\"name\":2}", "{\"name\"}", "{\"data\":",
      "{\"data\":1,}", "{\"datatype\":\"d\",\"data\":\"datatype\"}", "{\"\":1,\"n\":2}", "{}",
      "{\"shape\":[1,2],\"parameters\":{},\"name\":\"\"}"};
  static char a[256], b[256];
  int taken = 0;
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    size_t n = strlen(docs[i]);
    memcpy(a, docs[i], n);
    memcpy(b, docs[i], n);
    isv__json_reader ra, rb;
    isv__json_reader_init(&ra, a, n, 8);
    isv__json_reader_init(&rb, b, n, 8);
    for (int step = 0; step < 100; step++) {
      isv__json_token ta, tb;
      size_t pos = ra.pos;
      int st = ra.state;
      int k = isv__json_key_in(&ra, keys, sizeof keys / sizeof keys[0]);
      isv__json_type yb = isv__json_next(&rb, &tb);
      if (k >= 0) {
        taken++;
        if (yb != ISV__JSON_KEY || tb.len + 3 != keys[k].len ||
            memcmp(tb.ptr, keys[k].text + 1, tb.len) != 0)
          fail_msg("%s: key %s taken where the tokens read %d '%.*s'", docs[i], keys[k].text, yb,
                   (int)tb.len, tb.ptr ? tb.ptr : "");
      } else {
        assert_int_equal(ra.pos, pos); /* nothing read */
        assert_int_equal(ra.state, st);
        isv__json_type ya = isv__json_next(&ra, &ta);
        if (ya != yb || ta.len != tb.len || (ta.len && memcmp(ta.ptr, tb.ptr, ta.len) != 0))
          fail_msg("%s: step %d differs (%d against %d)", docs[i], step, ya, yb);
        if (ya == ISV__JSON_ERROR) {
          assert_string_equal(isv__json_error(&ra, NULL), isv__json_error(&rb, NULL));
          break;
        }
        if (ya == ISV__JSON_EOF) break;
      }
      assert_int_equal(ra.pos, rb.pos);
      assert_int_equal(ra.state, rb.state);
      assert_int_equal(ra.depth, rb.depth);
    }
  }
  assert_int_equal(taken, 18); /* the compact keys of the set in objects, and no other */
}

static void test_strings_in_place(void **state) {
  (void)state;
  /* no escapes: points into the buffer, buffer untouched */
  const char *doc = "[\"plain\", \"a\\u00e9\\n\\\"q\\\" \\uD83D\\uDE00 \\/\", \"\\u0000x\"]";
  isv__json_reader *r = reader_for(doc, strlen(doc), 4);
  isv__json_token t;
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_STRING);
  assert_ptr_equal(t.ptr, g_buf + 2);
  assert_int_equal(t.len, 5);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_STRING);
  const char want[] = "a\xC3\xA9\n\"q\" \xF0\x9F\x98\x80 /";
  assert_int_equal(t.len, sizeof want - 1);
  assert_memory_equal(t.ptr, want, t.len);
  assert_ptr_equal(t.ptr, g_buf + 11);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_STRING);
  assert_int_equal(t.len, 2);
  assert_memory_equal(t.ptr, "\0x", 2);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_END);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_EOF);
  /* keys are unescaped too */
  doc = "{\"k\\u0031\":1}";
  r = reader_for(doc, strlen(doc), 4);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_OBJECT_BEGIN);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_KEY);
  assert_int_equal(t.len, 2);
  assert_memory_equal(t.ptr, "k1", 2);
}

static void test_skip(void **state) {
  (void)state;
  const char *doc = "{\"data\": [[1, 2], {\"s\": \"a\\nb\"}, [\"\\u00e9\"]], \"shape\": [2], \"x\": \"y\\t\"}";
  isv__json_reader *r = reader_for(doc, strlen(doc), 16);
  isv__json_token t;
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_OBJECT_BEGIN);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_KEY);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  size_t start = t.offset, end = 0;
  assert_int_equal(isv__json_skip(r, &t, &end), 0);
  assert_int_equal(start, 9);
  assert_int_equal(end, 44);
  /* the skipped bytes are untouched (escapes still there) */
  assert_memory_equal(g_buf, doc, strlen(doc));
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_KEY);
  assert_memory_equal(t.ptr, "shape", 5);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  size_t shape_end;
  assert_int_equal(isv__json_skip(r, &t, &shape_end), 0);
  assert_int_equal(shape_end, 58);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_KEY);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_STRING);
  size_t send;
  assert_int_equal(isv__json_skip(r, &t, &send), 0); /* scalar: nothing to do */
  assert_int_equal(send, strlen(doc) - 1);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_OBJECT_END);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_EOF);

  /* a skipped region can be parsed again by a second reader */
  isv__json_reader r2;
  isv__json_reader_init(&r2, g_buf + start, end - start, 16);
  assert_int_equal(isv__json_next(&r2, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_skip(&r2, &t, NULL), 0);
  assert_int_equal(isv__json_next(&r2, &t), ISV__JSON_EOF);

  /* skip validates */
  doc = "[[1, 2,], 3]";
  r = reader_for(doc, strlen(doc), 16);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_skip(r, &t, NULL), -1);
  assert_non_null(strstr(isv__json_error(r, NULL), "trailing comma"));
}

/* ---- numbers ------------------------------------------------------------------------------ */
static void test_to_double_exact(void **state) {
  (void)state;
  static const char *const cases[] = {
      "0", "-0", "1", "0.1", "0.3", "3.14159", "1e22", "1e23", "9007199254740993", "9007199254740995",
      "9007199254740992.5", "4503599627370496.5", "4503599627370497.5", "2.2250738585072011e-308",
      "2.2250738585072014e-308", "4.9406564584124654e-324", "2.4703282292062327e-324",
      "2.4703282292062328e-324", "2.47032822920623272088e-324", "1.7976931348623157e308",
      "1.7976931348623158e308", "1.7976931348623159e308", "1e-400", "1e400", "123456789012345678901234567890e-10",
      "0.000000000000000000000000000000000000000000001", "7.2057594037927933e16", "1.00000000000000011102230246251565404236316680908203125",
      "1.00000000000000011102230246251565404236316680908203124", "1.00000000000000011102230246251565404236316680908203126",
      "89255.0e-22", "0.500000000000000166533453693773481063544750213623046875", "3.0e-44", "1e0000000000000000000000001",
      "0.0000000000000000000000000000000000000000000000000000000000000000000000001e73",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double want = strtod(cases[i], NULL);
    double got = to_d(cases[i]);
    if (dbits(got) != dbits(want)) fail_msg("%s: got %a want %a", cases[i], got, want);
  }
  assert_true(isinf(to_d("1e400")) && to_d("1e400") > 0); /* like strtod: +inf, no error */
  assert_true(to_d("-1e-400") == 0 && signbit(to_d("-1e-400")));
  assert_true(isnan(to_d("NaN")));
  assert_true(isinf(to_d("-Infinity")) && to_d("-Infinity") < 0);
  assert_true(dbits(to_d("4.9406564584124654e-324")) == 1);
  /* a 800-digit literal that is exactly a midpoint + epsilon */
  static char big[1400];
  strcpy(big, "2.4703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125");
  strcat(big, "e-324");
  /* that constant is exactly 2^-1075 (half of the smallest subnormal): a tie -> 0 */
  assert_true(dbits(to_d(big)) == 0);
  big[strlen(big) - 5] = '\0';
  strcat(big, "000000000000000000000001e-324");
  assert_true(dbits(to_d(big)) == 1);
}

static void test_to_float_exact(void **state) {
  (void)state;
  assert_true(to_f("16777217") == 16777216.0f);
  assert_true(to_f("16777219") == 16777220.0f);
  assert_true(to_f("16777217.000000000000000001") == 16777218.0f);
  assert_true(to_f("8388608.5") == 8388608.0f);
  assert_true(to_f("8388609.5") == 8388610.0f);
  assert_true(to_f("3.4028235e38") == FLT_MAX);
  assert_true(to_f("340282356779733661637539395458142568447") == FLT_MAX);
  assert_true(isinf(to_f("340282356779733661637539395458142568448"))); /* tie -> even -> inf */
  assert_true(isinf(to_f("1e39")));
  assert_true(fbits(to_f("1e-45")) == 1);
  assert_true(fbits(to_f("1.401298464324817e-45")) == 1);
  assert_true(fbits(to_f("7.006492321624085354618647916449580656401309709382578858785341419448955413429303e-46")) == 0);
  assert_true(fbits(to_f("7.006492321624085354618647916449580656401309709382578858785341419448955413429304e-46")) == 1);
  assert_true(fbits(to_f("1.1754942e-38")) == 0x007FFFFFu); /* largest subnormal */
  assert_true(fbits(to_f("1.17549435e-38")) == 0x00800000u);
  /* would double-round through double: 1 + 2^-24 + 2^-60 is above the float midpoint */
  assert_true(fbits(to_f("1.000000059604644776255")) == 0x3F800001u);
  assert_true(fbits(to_f("1.000000059604644775390625")) == 0x3F800000u);
  assert_true(fbits(to_f("-0")) == 0x80000000u);
  assert_true(isnan(to_f("NaN")));
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* A random decimal literal of one of several shapes. */
static size_t random_literal(char *b) {
  size_t n = 0;
  if (rng() & 1) b[n++] = '-';
  int kind = (int)(rng() % 6);
  if (kind == 0) {
    uint64_t u = rng();
    double d;
    memcpy(&d, &u, 8);
    if (!isfinite(d)) d = 1.25;
    return n + (size_t)sprintf(b + n, "%.*e", (int)(rng() % 20), fabs(d));
  }
  if (kind == 1) {
    uint32_t u = (uint32_t)rng();
    float f;
    memcpy(&f, &u, 4);
    if (!isfinite(f)) f = 2;
    return n + (size_t)sprintf(b + n, "%.*g", (int)(1 + rng() % 10), fabs((double)f));
  }
  int nd = 1 + (int)(rng() % (kind == 2 ? 30 : 8));
  b[n++] = (char)('1' + rng() % 9);
  for (int i = 1; i < nd; i++) b[n++] = (char)('0' + rng() % 10);
  if (rng() & 1) {
    b[n++] = '.';
    int nf = 1 + (int)(rng() % (kind == 3 ? 40 : 6));
    for (int i = 0; i < nf; i++) b[n++] = (char)('0' + rng() % 10);
  }
  if (rng() & 1)
    n += (size_t)sprintf(b + n, "e%d", (int)(rng() % (kind == 4 ? 700 : 80)) - (kind == 4 ? 350 : 40));
  b[n] = 0;
  return n;
}

static void test_random_vs_strtod(void **state) {
  (void)state;
  char b[128];
  for (int i = 0; i < 200000; i++) {
    random_literal(b);
    double d = to_d(b), dw = strtod(b, NULL);
    if (dbits(d) != dbits(dw)) fail_msg("f64 %s: got %a want %a", b, d, dw);
    float f = to_f(b), fw = strtof(b, NULL);
    if (fbits(f) != fbits(fw)) fail_msg("f32 %s: got %a want %a", b, (double)f, (double)fw);
  }
}

static void test_half_vectors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof half_vectors / sizeof half_vectors[0]; i++) {
    isv__json_token t = num_tok(half_vectors[i].s);
    uint16_t h, b;
    assert_int_equal(isv__json_to_f16(&t, &h), 0);
    assert_int_equal(isv__json_to_bf16(&t, &b), 0);
    if (h != half_vectors[i].f16) fail_msg("FP16 %s: got %04X want %04X", half_vectors[i].s, h, half_vectors[i].f16);
    if (b != half_vectors[i].bf16) fail_msg("BF16 %s: got %04X want %04X", half_vectors[i].s, b, half_vectors[i].bf16);
    if (half_vectors[i].s[0] == '-') continue;
    /* negative */
    char neg[512];
    snprintf(neg, sizeof neg, "-%s", half_vectors[i].s);
    t = num_tok(neg);
    assert_int_equal(isv__json_to_f16(&t, &h), 0);
    assert_int_equal(h, half_vectors[i].f16 | 0x8000);
  }
  isv__json_token t = num_tok("NaN");
  uint16_t h;
  assert_int_equal(isv__json_to_f16(&t, &h), 0);
  assert_true((h & 0x7C00) == 0x7C00 && (h & 0x3FF));
  t = num_tok("-Infinity");
  assert_int_equal(isv__json_to_bf16(&t, &h), 0);
  assert_int_equal(h, 0xFF80);
}

static void test_integers(void **state) {
  (void)state;
  int64_t i;
  uint64_t u;
  isv__json_token t;
#define I64_OK(s, v)                                   \
  t = num_tok(s);                                      \
  assert_int_equal(isv__json_to_int64(&t, &i), 0);     \
  assert_true(i == (v))
#define I64_BAD(s)  \
  t = num_tok(s);   \
  assert_int_equal(isv__json_to_int64(&t, &i), -1)
#define U64_OK(s, v)                                   \
  t = num_tok(s);                                      \
  assert_int_equal(isv__json_to_uint64(&t, &u), 0);    \
  assert_true(u == (v))
#define U64_BAD(s) \
  t = num_tok(s);  \
  assert_int_equal(isv__json_to_uint64(&t, &u), -1)
  I64_OK("0", 0);
  I64_OK("-0", 0);
  I64_OK("9223372036854775807", INT64_MAX);
  I64_OK("-9223372036854775808", INT64_MIN);
  I64_OK("999999999999999999", INT64_C(999999999999999999)); /* 18 digits: the short path */
  I64_OK("-999999999999999999", -INT64_C(999999999999999999));
  I64_OK("1000000000000000000", INT64_C(1000000000000000000)); /* 19: the general one */
  I64_OK("-7", -7);
  I64_BAD("-");
  I64_BAD("00");
  I64_BAD("-01");
  I64_BAD("1-");
  I64_BAD("9223372036854775808");
  I64_BAD("-9223372036854775809");
  I64_BAD("99999999999999999999999");
  I64_BAD("1.0");
  I64_BAD("1e2");
  I64_BAD("NaN");
  I64_BAD("-Infinity");
  U64_OK("18446744073709551615", UINT64_MAX);
  U64_OK("-0", 0);
  U64_BAD("18446744073709551616");
  U64_BAD("-1");
  U64_BAD("0.5");
  t.type = ISV__JSON_STRING;
  assert_int_equal(isv__json_to_int64(&t, &i), -1);
  t = num_tok("12x");
  assert_int_equal(isv__json_to_int64(&t, &i), -1);
  double d;
  assert_int_equal(isv__json_to_double(&t, &d), -1);
#undef I64_OK
#undef I64_BAD
#undef U64_OK
#undef U64_BAD
}

/* ---- tensors ------------------------------------------------------------------------------ */
/* Parse `json` (one value) as a tensor; returns NULL on success or the error message. */
static const char *tensor(const char *json, isv_datatype dt, void *out, size_t count, size_t *off) {
  isv__json_reader *r = reader_for(json, strlen(json), 8);
  isv__json_token t;
  isv__json_type ty = isv__json_next(r, &t);
  if (ty == ISV__JSON_ERROR) return isv__json_error(r, off);
  if (isv__json_read_tensor(r, &t, dt, out, count) != 0) {
    const char *e = isv__json_error(r, off);
    assert_non_null(e);
    return e;
  }
  if (isv__json_next(r, &t) != ISV__JSON_EOF) return isv__json_error(r, off);
  return NULL;
}

static void tensor_err(const char *json, isv_datatype dt, size_t count, const char *substr, size_t offset) {
  static unsigned char out[4096];
  size_t off = (size_t)-1;
  const char *e = tensor(json, dt, out, count, &off);
  if (!e) fail_msg("accepted %s", json);
  if (!strstr(e, substr)) fail_msg("for %s: \"%s\" lacks \"%s\"", json, e, substr);
  if (offset != (size_t)-1) {
    char want[40];
    snprintf(want, sizeof want, "offset %zu", offset);
    if (off != offset || !strstr(e, want)) fail_msg("for %s: \"%s\": want offset %zu", json, e, offset);
  }
}

static void test_tensor_int_ranges(void **state) {
  (void)state;
  int8_t i8[3];
  assert_null(tensor("[-128, 0, 127]", ISV_INT8, i8, 3, NULL));
  assert_true(i8[0] == -128 && i8[1] == 0 && i8[2] == 127);
  tensor_err("[1, 128]", ISV_INT8, 2, "element 1: 128 is out of range for INT8", 4);
  tensor_err("[-129]", ISV_INT8, 1, "element 0: -129 is out of range for INT8", 1);
  uint8_t u8[2];
  assert_null(tensor("[0,255]", ISV_UINT8, u8, 2, NULL));
  assert_true(u8[1] == 255);
  tensor_err("[256]", ISV_UINT8, 1, "256 is out of range for UINT8", 1);
  tensor_err("[-1]", ISV_UINT8, 1, "-1 is out of range for UINT8", 1);
  assert_null(tensor("[-0]", ISV_UINT8, u8, 1, NULL));
  int16_t i16[2];
  assert_null(tensor("[-32768,32767]", ISV_INT16, i16, 2, NULL));
  assert_true(i16[0] == INT16_MIN && i16[1] == INT16_MAX);
  tensor_err("[32768]", ISV_INT16, 1, "out of range for INT16", 1);
  uint16_t u16[1];
  assert_null(tensor("[65535]", ISV_UINT16, u16, 1, NULL));
  tensor_err("[65536]", ISV_UINT16, 1, "out of range for UINT16", 1);
  int32_t i32[2];
  assert_null(tensor("[-2147483648,2147483647]", ISV_INT32, i32, 2, NULL));
  assert_true(i32[0] == INT32_MIN && i32[1] == INT32_MAX);
  tensor_err("[2147483648]", ISV_INT32, 1, "out of range for INT32", 1);
  tensor_err("[-2147483649]", ISV_INT32, 1, "out of range for INT32", 1);
  uint32_t u32[1];
  assert_null(tensor("[4294967295]", ISV_UINT32, u32, 1, NULL));
  assert_true(u32[0] == UINT32_MAX);
  tensor_err("[4294967296]", ISV_UINT32, 1, "out of range for UINT32", 1);
  int64_t i64[2];
  assert_null(tensor("[-9223372036854775808, 9223372036854775807]", ISV_INT64, i64, 2, NULL));
  assert_true(i64[0] == INT64_MIN && i64[1] == INT64_MAX);
  tensor_err("[9223372036854775808]", ISV_INT64, 1, "out of range for INT64", 1);
  tensor_err("[-9223372036854775809]", ISV_INT64, 1, "out of range for INT64", 1);
  uint64_t u64[1];
  assert_null(tensor("[18446744073709551615]", ISV_UINT64, u64, 1, NULL));
  assert_true(u64[0] == UINT64_MAX);
  tensor_err("[18446744073709551616]", ISV_UINT64, 1, "18446744073709551616 is out of range for UINT64", 1);
  tensor_err("[184467440737095516150000]", ISV_UINT64, 1, "out of range for UINT64", 1);
  /* fractions and exponents are refused, with a message that says so */
  tensor_err("[1, 1.0]", ISV_INT32, 2, "element 1: 1.0 is not an integer (INT32 takes no fraction or exponent)", 4);
  tensor_err("[1e2]", ISV_INT32, 1, "1e2 is not an integer", 1);
  tensor_err("[NaN]", ISV_INT64, 1, "NaN is not an integer", 1);
  tensor_err("[-Infinity]", ISV_UINT8, 1, "-Infinity is not an integer", 1);
  tensor_err("[01]", ISV_INT32, 1, "leading zero", 1);
  tensor_err("[1.]", ISV_INT32, 1, "expected a digit after '.'", 3);
  tensor_err("[\"1\"]", ISV_INT32, 1, "element 0: expected a number for INT32, got a string", 1);
  tensor_err("[null]", ISV_INT32, 1, "got null", 1);
  tensor_err("[true]", ISV_INT32, 1, "got a boolean", 1);
  tensor_err("[-]", ISV_INT32, 1, "invalid number", 1);
  tensor_err("[{}]", ISV_UINT8, 1, "got an object", 1);
}

/* An integer element is read eight bytes at a time when eight are left in the body, one by one
 * near its end: the two ways must agree on every literal, value and message alike. */
static void test_tensor_ints_near_and_far_from_the_end(void **state) {
  (void)state;
  static const char *const lits[] = {"0", "7", "10", "99", "1234567", "12345678", "123456789",
                                     "123456789012", "9223372036854775807", "-0", "-7", "-1234567",
                                     "-12345678", "00", "01", "0123", "-01", "1.5", "7e1", "7E1",
                                     "12345678.0", "1234567e2", "99999999999999999999", "-"};
  for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
    char near[64], far[64];
    snprintf(near, sizeof near, "[%s]", lits[i]);           /* fewer than 8 bytes after it */
    snprintf(far, sizeof far, "[%s        ]", lits[i]);      /* 8 spaces after it */
    int64_t a = 0, b = 0;
    char ea[256] = "", eb[256] = "";
    size_t oa = 0, ob = 0;
    const char *e = tensor(near, ISV_INT64, &a, 1, &oa);
    if (e) snprintf(ea, sizeof ea, "%s", e);
    e = tensor(far, ISV_INT64, &b, 1, &ob);
    if (e) snprintf(eb, sizeof eb, "%s", e);
    if (strcmp(ea, eb) != 0 || oa != ob || (!ea[0] && a != b))
      fail_msg("%s: near the end \"%s\" (%lld), far from it \"%s\" (%lld)", lits[i], ea,
               (long long)a, eb, (long long)b);
    int64_t v;
    isv__json_token t = num_tok(lits[i]);
    if (!ea[0] && (isv__json_to_int64(&t, &v) != 0 || v != a)) fail_msg("%s read as %lld", lits[i], (long long)a);
  }
  int32_t x[3];
  assert_null(tensor("[1,22,333]        ", ISV_INT32, x, 3, NULL));
  assert_true(x[0] == 1 && x[1] == 22 && x[2] == 333);
}

/* An integer element followed at once by ',' or ']' is read with its separator in one turn (an
 * eight-byte digit read); followed by a space it takes the element-by-element way. Both must
 * agree for every integer datatype on every literal: the values, and the same message for the
 * same element (its offset one further in the spaced form). */
static void test_tensor_ints_compact_and_spaced_agree(void **state) {
  (void)state;
  static const char *const lits[] = {"0", "7", "-0", "-7", "127", "128", "-128", "-129", "255",
                                     "256", "32767", "32768", "-32769", "65535", "65536",
                                     "1234567", "-1234567", "9999999", "12345678", "2147483647",
                                     "2147483648", "4294967296", "00", "01", "-01", "1.5", "7e1",
                                     "-", "--1", "1-", "\"1\"", "[1]", "true", "NaN"};
  static const isv_datatype dts[] = {ISV_UINT8, ISV_UINT16, ISV_UINT32, ISV_UINT64,
                                     ISV_INT8,  ISV_INT16,  ISV_INT32,  ISV_INT64};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
      char compact[96], spaced[96];
      snprintf(compact, sizeof compact, "[5,%s,6]              ", lits[i]);
      snprintf(spaced, sizeof spaced, "[5 ,%s ,6 ]", lits[i]);
      uint64_t a[3] = {0}, b[3] = {0};
      char ea[256] = "", eb[256] = "";
      size_t oa = 0, ob = 0;
      const char *e = tensor(compact, dts[d], a, 3, &oa);
      if (e) snprintf(ea, sizeof ea, "%s", e);
      e = tensor(spaced, dts[d], b, 3, &ob);
      if (e) snprintf(eb, sizeof eb, "%s", e);
      char *at = strstr(ea, " at offset"), *bt = strstr(eb, " at offset");
      if (at) *at = '\0';
      if (bt) *bt = '\0';
      if (strcmp(ea, eb) != 0 || (ea[0] && ob != oa + 1) || memcmp(a, b, sizeof a) != 0)
        fail_msg("%s as %s: compact \"%s\" (offset %zu), spaced \"%s\" (offset %zu)", lits[i],
                 isv_datatype_name(dts[d]), ea, oa, eb, ob);
    }
  /* many in a row, signs mixed, the last ones near the end of the body */
  int32_t x[12];
  assert_null(tensor("[1,-22,333,-4444,55555,-666666,7777777,0,-0,9,10,-11]", ISV_INT32, x, 12, NULL));
  static const int32_t want[12] = {1, -22, 333, -4444, 55555, -666666, 7777777, 0, 0, 9, 10, -11};
  assert_memory_equal(x, want, sizeof want);
  tensor_err("[1,2,3,4,5,6,7,8,9,10,11,12,13]          ", ISV_INT32, 12,
             "expected 12 elements, got more than 12", (size_t)-1);
  tensor_err("[1,2,3]          ", ISV_INT32, 4, "expected 4 elements, got 3", (size_t)-1);
  tensor_err("[1,2,]          ", ISV_INT32, 3, "trailing comma", 5);
  tensor_err("[1,2,          ", ISV_INT32, 3, "unexpected end", (size_t)-1);
  tensor_err("[1,2", ISV_INT32, 2, "unexpected end", (size_t)-1);
  /* what may follow a comma the eight-byte loop took — a space, a ']', the count already
   * reached, a number it does not take — at every distance from the end of the body */
  for (int pad = 0; pad <= 12; pad++) {
    char doc[64];
    int32_t z[4] = {0};
    snprintf(doc, sizeof doc, "[1,2, 3,\t4]%*s", pad, "");
    assert_null(tensor(doc, ISV_INT32, z, 4, NULL));
    assert_true(z[0] == 1 && z[1] == 2 && z[2] == 3 && z[3] == 4);
    snprintf(doc, sizeof doc, "[1,2,12345678,-0]%*s", pad, "");
    assert_null(tensor(doc, ISV_INT32, z, 4, NULL));
    assert_true(z[2] == 12345678 && z[3] == 0);
    snprintf(doc, sizeof doc, "[1,2,]%*s", pad, "");
    tensor_err(doc, ISV_INT32, 2, "trailing comma", 5);
    tensor_err(doc, ISV_INT32, 3, "trailing comma", 5);
    snprintf(doc, sizeof doc, "[1,2, ]%*s", pad, "");
    tensor_err(doc, ISV_INT32, 2, "trailing comma", 6);
    snprintf(doc, sizeof doc, "[1,2,3]%*s", pad, "");
    tensor_err(doc, ISV_INT32, 2, "expected 2 elements, got more than 2", 5);
    snprintf(doc, sizeof doc, "[1,2,x]%*s", pad, "");
    tensor_err(doc, ISV_INT32, 3, "element 2", 5);
    snprintf(doc, sizeof doc, "[1,2,-x]%*s", pad, "");
    tensor_err(doc, ISV_INT32, 3, "element 2", 5);
    snprintf(doc, sizeof doc, "[1,2,300]%*s", pad, "");
    tensor_err(doc, ISV_UINT8, 3, "element 2", 5);
  }
  int8_t y[4];
  assert_null(tensor("[[1,2],[3,-4]]          ", ISV_INT8, y, 4, NULL));
  assert_true(y[0] == 1 && y[1] == 2 && y[2] == 3 && y[3] == -4);
}

/* Runs of one-digit elements are read four to a word ("1,0,1,1,", or the last four with their
 * ']'), and so are the same runs spaced after each comma as json.dumps writes them ("1, 0, 1,
 * 1, "). Both must agree — the values, or the same message — for random runs with the odd
 * element that is not one digit (a longer number, a sign, a fraction, a stray byte), every count
 * from too few to too many, every integer datatype, two float ones and every distance from the
 * end of the body. */
static void test_tensor_one_digit_runs_agree(void **state) {
  (void)state;
  static const char *const odd[] = {"10", "-1", "/", ":", "x", "1.5", "01", "\xb1", "[1]", ""};
  static const isv_datatype dts[] = {ISV_UINT8, ISV_INT8, ISV_INT32, ISV_UINT64, ISV_INT64,
                                     ISV_FP32,  ISV_FP64};
  for (int round = 0; round < 4000; round++) {
    int n = 1 + (int)pick(14);
    char compact[256], spaced[256];
    size_t c = 0, sp = 0;
    compact[c++] = spaced[sp++] = '[';
    for (int i = 0; i < n; i++) {
      char el[8];
      if (pick(9) == 0) {
        snprintf(el, sizeof el, "%s", odd[pick(sizeof odd / sizeof odd[0])]);
      } else {
        snprintf(el, sizeof el, "%u", (unsigned)pick(10));
      }
      const char *sep = i ? "," : "";
      c += (size_t)snprintf(compact + c, sizeof compact - c, "%s%s", sep, el);
      sp += (size_t)snprintf(spaced + sp, sizeof spaced - sp, "%s%s%s", sep, i ? " " : "", el);
    }
    int pad = (int)pick(12);
    snprintf(compact + c, sizeof compact - c, "]%*s", pad, "");
    snprintf(spaced + sp, sizeof spaced - sp, "]%*s", pad, "");
    size_t count = (size_t)n + (pick(5) == 0 ? pick(3) : 0) - (pick(5) == 0 ? 1 : 0);
    isv_datatype dt = dts[pick(sizeof dts / sizeof dts[0])];
    uint64_t a[20] = {0}, b[20] = {0};
    char ea[256] = "", eb[256] = "";
    const char *e = tensor(compact, dt, a, count, NULL);
    if (e) snprintf(ea, sizeof ea, "%s", e);
    e = tensor(spaced, dt, b, count, NULL);
    if (e) snprintf(eb, sizeof eb, "%s", e);
    char *at = strstr(ea, " at offset"), *bt = strstr(eb, " at offset");
    if (at) *at = '\0';
    if (bt) *bt = '\0';
    if (strcmp(ea, eb) != 0 || memcmp(a, b, sizeof a) != 0)
      fail_msg("%s (%zu as %s): \"%s\", spaced \"%s\"", compact, count, isv_datatype_name(dt), ea,
               eb);
  }
  int32_t x[16];
  assert_null(tensor("[1,0,1,1,0,0,0,1,9,8,7,6,5,4,3,2]", ISV_INT32, x, 16, NULL));
  static const int32_t want[16] = {1, 0, 1, 1, 0, 0, 0, 1, 9, 8, 7, 6, 5, 4, 3, 2};
  assert_memory_equal(x, want, sizeof want);
  tensor_err("[1,0,1,1]        ", ISV_INT32, 5, "expected 5 elements, got 4", (size_t)-1);
  tensor_err("[1,0,1,1,1]        ", ISV_INT32, 4, "expected 4 elements, got more than 4", 9);
  tensor_err("[1,0,1,1,]        ", ISV_INT32, 4, "trailing comma", 9);
  int8_t y[8];
  assert_null(tensor("[[1,2,3,4],[5,6,7,8]]", ISV_INT8, y, 8, NULL));
  assert_true(y[0] == 1 && y[3] == 4 && y[4] == 5 && y[7] == 8);
}

/* isv__json_small_uints takes a compact shape (or one spaced as json.dumps writes it, ", ")
 * whole, or nothing: where it says yes, reading the array token by token gives the same integers
 * and leaves the reader at the same place (the next token alike); where it says no, the reader
 * is as it was (the tokens read after are the same). */
static void test_small_uints_whole_or_nothing(void **state) {
  (void)state;
  static const struct {
    const char *doc;
    int whole; /* the count, or -1 */
  } cases[] = {
      {"{\"shape\":[1,16],\"x\":1}", 2},     {"{\"shape\":[],\"x\":1}        ", 0},
      {"{\"shape\":[7],\"x\":1}         ", 1}, {"{\"shape\":[0,1234567,3],\"x\":1}", 3},
      {"{\"shape\":[1, 16],\"x\":1}", 2},    {"{\"shape\":[ 1,16],\"x\":1}", -1},
      {"{\"shape\":[1, 2, 3],\"x\":1}", 3},  {"{\"shape\":[1,  16],\"x\":1}", -1},
      {"{\"shape\":[1,\t16],\"x\":1}", -1},  {"{\"shape\":[1, ,2],\"x\":1}", -1},
      {"{\"shape\":[1 ,16],\"x\":1}", -1},   {"{\"shape\":[1, 16]}    ", 2},
      {"{\"shape\":[1,16 ],\"x\":1}", -1},   {"{\"shape\":[-1,16],\"x\":1}", -1},
      {"{\"shape\":[01,16],\"x\":1}", -1},   {"{\"shape\":[12345678],\"x\":1}", -1},
      {"{\"shape\":[1.5,2],\"x\":1}", -1},   {"{\"shape\":[1e2],\"x\":1}      ", -1},
      {"{\"shape\":[[1],2],\"x\":1}", -1},   {"{\"shape\":[1,,2],\"x\":1}", -1},
      {"{\"shape\":[1,2,],\"x\":1}", -1},    {"{\"shape\":[\"1\"],\"x\":1}", -1},
      {"{\"shape\":[1,2]", -1}, /* fewer than 8 bytes left: token by token */
      {"{\"shape\":[1,2,3,4,5,6,7,8,9],\"x\":1}", -1}, /* more than max (8 here) */
      {"{\"shape\":[1,2,3,4,5,6,7,8],\"x\":1}", 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *doc = cases[i].doc;
    char a[128], b[128];
    size_t n = strlen(doc);
    memcpy(a, doc, n + 1);
    memcpy(b, doc, n + 1);
    isv__json_reader ra, rb;
    isv__json_reader_init(&ra, a, n, 8);
    isv__json_reader_init(&rb, b, n, 8);
    isv__json_token t;
    for (int k = 0; k < 3; k++) { /* {, "shape", [ */
      isv__json_next(&ra, &t);
      isv__json_next(&rb, &t);
    }
    assert_int_equal(t.type, ISV__JSON_ARRAY_BEGIN);
    int64_t got[8];
    size_t before = ra.pos;
    int whole = isv__json_small_uints(&ra, got, 8);
    if (whole != cases[i].whole) fail_msg("%s: %d, want %d", doc, whole, cases[i].whole);
    if (whole < 0) assert_int_equal(ra.pos, before);
    /* rb reads the array token by token */
    size_t m = 0;
    int64_t want[16];
    isv__json_type ty;
    while ((ty = isv__json_next(&rb, &t)) != ISV__JSON_ARRAY_END && ty != ISV__JSON_ERROR &&
           ty != ISV__JSON_EOF) {
      if (whole < 0) { /* ra reads the same tokens */
        isv__json_token u;
        assert_int_equal(isv__json_next(&ra, &u), ty);
        assert_int_equal(u.offset, t.offset);
        continue;
      }
      assert_int_equal(ty, ISV__JSON_NUMBER);
      assert_int_equal(isv__json_to_int64(&t, &want[m]), 0);
      m++;
    }
    if (whole >= 0) {
      assert_int_equal(ty, ISV__JSON_ARRAY_END);
      assert_int_equal((size_t)whole, m);
      assert_memory_equal(got, want, m * sizeof *got);
      assert_int_equal(ra.pos, rb.pos);
      assert_int_equal(ra.depth, rb.depth);
      isv__json_token u;
      assert_int_equal(isv__json_next(&ra, &u), isv__json_next(&rb, &t)); /* "x" */
      assert_int_equal(u.offset, t.offset);
    }
  }
  /* not right after an ARRAY_BEGIN: no */
  char d[] = "[1,2]          ";
  isv__json_reader r;
  isv__json_reader_init(&r, d, strlen(d), 8);
  int64_t x[4];
  assert_int_equal(isv__json_small_uints(&r, x, 4), -1);
}

/* A string's plain run is found eight bytes at a time: whatever ends it — the quote, an
 * escape, a control byte, UTF-8 or a stray byte — at every position of a 20-byte string. */
static void test_strings_ended_at_every_position(void **state) {
  (void)state;
  for (size_t at = 0; at < 20; at++) {
    char json[64], body[32];
    memset(body, 'a', 20);
    body[20] = '\0';
    /* an escape: read unescaped */
    snprintf(json, sizeof json, "[\"%.*s\\n%s\"]", (int)at, body, body + at);
    isv__json_reader *r = reader_for(json, strlen(json), 8);
    isv__json_token t;
    assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
    assert_int_equal(isv__json_next(r, &t), ISV__JSON_STRING);
    assert_int_equal(t.len, 21);
    assert_true(t.ptr[at] == '\n' && t.ptr[0] == (at ? 'a' : '\n'));
    isv_bytes el; /* the same string as a BYTES element */
    assert_null(tensor(json, ISV_BYTES, &el, 1, NULL));
    assert_true(el.len == 21 && ((const char *)el.ptr)[at] == '\n');
    /* two-byte UTF-8 (U+00E9): kept as it is */
    snprintf(json, sizeof json, "[\"%.*s\xc3\xa9%s\"]", (int)at, body, body + at);
    r = reader_for(json, strlen(json), 8);
    assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
    assert_int_equal(isv__json_next(r, &t), ISV__JSON_STRING);
    assert_int_equal(t.len, 22);
    assert_memory_equal(t.ptr + at, "\xc3\xa9", 2);
    assert_null(tensor(json, ISV_BYTES, &el, 1, NULL));
    assert_true(el.len == 22 && memcmp((const char *)el.ptr + at, "\xc3\xa9", 2) == 0);
    /* a control byte, a stray continuation byte: refused where they are */
    snprintf(json, sizeof json, "[\"%.*s\x01%s\"]", (int)at, body, body + at);
    expect_error(json, "control character", 2 + at);
    tensor_err(json, ISV_BYTES, 1, "control character", 2 + at);
    snprintf(json, sizeof json, "[\"%.*s\x80%s\"]", (int)at, body, body + at);
    expect_error(json, "UTF-8", 2 + at);
    /* the closing quote itself */
    snprintf(json, sizeof json, "[\"%.*s\", 1]", (int)at, body);
    r = reader_for(json, strlen(json), 8);
    assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
    assert_int_equal(isv__json_next(r, &t), ISV__JSON_STRING);
    assert_int_equal(t.len, at);
    assert_int_equal(isv__json_next(r, &t), ISV__JSON_NUMBER);
    snprintf(json, sizeof json, "[\"%.*s\"]", (int)at, body);
    assert_null(tensor(json, ISV_BYTES, &el, 1, NULL));
    assert_true(el.len == at && memcmp(el.ptr, body, at) == 0);
  }
}

static void test_tensor_floats(void **state) {
  (void)state;
  float f[6];
  assert_null(tensor("[[1.5, -2], [NaN, Infinity], [-Infinity, 16777217]]", ISV_FP32, f, 6, NULL));
  assert_true(f[0] == 1.5f && f[1] == -2.0f && isnan(f[2]) && isinf(f[3]) && f[3] > 0 && isinf(f[4]) &&
              f[4] < 0 && f[5] == 16777216.0f);
  double d[3];
  assert_null(tensor("[1e400, -1e-400, 0.1]", ISV_FP64, d, 3, NULL));
  assert_true(isinf(d[0]) && d[1] == 0 && signbit(d[1]) && d[2] == 0.1);
  uint16_t h[3];
  assert_null(tensor("[2049, 2051, 1.00048828125000000001]", ISV_FP16, h, 3, NULL));
  assert_true(h[0] == 0x6800 && h[1] == 0x6802 && h[2] == 0x3C01);
  assert_null(tensor("[1.00390625, 1.01171875, -0.0]", ISV_BF16, h, 3, NULL));
  assert_true(h[0] == 0x3F80 && h[1] == 0x3F82 && h[2] == 0x8000);
  tensor_err("[1, \"2\"]", ISV_FP32, 2, "element 1: expected a number for FP32, got a string", 4);
  tensor_err("[1, 2e]", ISV_FP64, 2, "element 1: expected a digit in the exponent", 6);
  tensor_err("[true]", ISV_FP16, 1, "expected a number for FP16, got a boolean", 1);
  tensor_err("[nan]", ISV_FP32, 1, "expected a number for FP32, got 'n' at offset 1", 1);
  tensor_err("[nul]", ISV_INT32, 1, "got 'n'", 1);
}

static void test_tensor_counts_and_shapes(void **state) {
  (void)state;
  int32_t v[8];
  assert_null(tensor("[[1,2,3],[4,5,6]]", ISV_INT32, v, 6, NULL));
  for (int i = 0; i < 6; i++) assert_int_equal(v[i], i + 1);
  assert_null(tensor("[[[1],[2]],[[3],[4]]]", ISV_INT32, v, 4, NULL));
  assert_int_equal(v[3], 4);
  assert_null(tensor("[[], [1, [2, [3]]], []]", ISV_INT32, v, 3, NULL)); /* any nesting flattens */
  assert_int_equal(v[2], 3);
  assert_null(tensor("[]", ISV_INT32, v, 0, NULL));
  assert_null(tensor("[[],[]]", ISV_FP32, v, 0, NULL));
  assert_null(tensor("  7  ", ISV_INT32, v, 1, NULL)); /* a scalar is one element */
  assert_int_equal(v[0], 7);
  tensor_err("7", ISV_INT32, 2, "expected 2 elements, got 1", 0);
  tensor_err("[1,2,3]", ISV_INT32, 4, "expected 4 elements, got 3", 0);
  tensor_err("[[1,2],[3]]", ISV_INT32, 4, "expected 4 elements, got 3", 0);
  /* too many: stops at the first extra element, before even looking at it */
  tensor_err("[1,2,3,{oops", ISV_INT32, 2, "expected 2 elements, got more than 2", 5);
  tensor_err("[1,2,", ISV_INT32, 2, "unexpected end of input", 5);
  tensor_err("[1,2,]", ISV_INT32, 3, "trailing comma before ']'", 5);
  tensor_err("[1 2]", ISV_INT32, 2, "unexpected '2' at offset 3, expected ',' or ']'", 3);
  tensor_err("[1,,2]", ISV_INT32, 2, "expected a number for INT32", 3);
  tensor_err("[[[[[[[[[1]]]]]]]]]", ISV_INT32, 1, "nesting deeper than 8", 8);
  tensor_err("{\"a\":1}", ISV_INT32, 1, "expected a number for INT32, got an object", 0);
  tensor_err("null", ISV_FP32, 1, "got null", 0);
  tensor_err("\"x\"", ISV_FP32, 1, "got a string", 0);
}

static void test_tensor_bool_bytes(void **state) {
  (void)state;
  uint8_t b[3];
  assert_null(tensor("[true,false,true]", ISV_BOOL, b, 3, NULL));
  assert_true(b[0] == 1 && b[1] == 0 && b[2] == 1);
  assert_null(tensor("false", ISV_BOOL, b, 1, NULL));
  assert_int_equal(b[0], 0);
  tensor_err("[1]", ISV_BOOL, 1, "expected true or false for BOOL, got a number", 1);
  tensor_err("[null]", ISV_BOOL, 1, "got null", 1);
  tensor_err("[\"true\"]", ISV_BOOL, 1, "got a string", 1);
  tensor_err("[tru]", ISV_BOOL, 1, "expected true or false", 1);

  isv_bytes s[4];
  assert_null(tensor("[\"abc\", \"a\\nb\", {\"b64\": \"AAH/\"}, \"\"]", ISV_BYTES, s, 4, NULL));
  assert_int_equal(s[0].len, 3);
  assert_memory_equal(s[0].ptr, "abc", 3);
  assert_int_equal(s[1].len, 3);
  assert_memory_equal(s[1].ptr, "a\nb", 3);
  assert_int_equal(s[2].len, 3);
  assert_memory_equal(s[2].ptr, "\x00\x01\xff", 3);
  assert_int_equal(s[3].len, 0);
  assert_null(tensor("{\"b64\":\"aGk=\"}", ISV_BYTES, s, 1, NULL));
  assert_int_equal(s[0].len, 2);
  assert_memory_equal(s[0].ptr, "hi", 2);
  assert_null(tensor("\"solo\"", ISV_BYTES, s, 1, NULL));
  assert_memory_equal(s[0].ptr, "solo", 4);
  tensor_err("[1]", ISV_BYTES, 1, "expected a string for BYTES, got a number", 1);
  tensor_err("[{\"b64\": \"a\"}]", ISV_BYTES, 1, "invalid base64", 9);
  tensor_err("[{\"x\": \"aGk=\"}]", ISV_BYTES, 1, "{\"b64\": \"<base64>\"}", 2);
  tensor_err("[\"\\q\"]", ISV_BYTES, 1, "invalid escape \\q", 2);
  tensor_err("[\"\xff\"]", ISV_BYTES, 1, "invalid UTF-8", 2);
}

static void test_tensor_inside_document(void **state) {
  (void)state;
  const char *doc = "{\"inputs\":[{\"name\":\"x\",\"data\":[[1,2],[3,4]],\"shape\":[2,2]}],\"id\":\"q\"}";
  isv__json_reader *r = reader_for(doc, strlen(doc), 16);
  isv__json_token t;
  float out[4];
  int seen_shape = 0, seen_id = 0;
  for (;;) {
    isv__json_type ty = isv__json_next(r, &t);
    assert_int_not_equal(ty, ISV__JSON_ERROR);
    if (ty == ISV__JSON_EOF) break;
    if (ty == ISV__JSON_KEY && t.len == 4 && memcmp(t.ptr, "data", 4) == 0) {
      assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
      assert_int_equal(isv__json_read_tensor(r, &t, ISV_FP32, out, 4), 0);
    }
    if (ty == ISV__JSON_KEY && t.len == 5 && memcmp(t.ptr, "shape", 5) == 0) seen_shape = 1;
    if (ty == ISV__JSON_STRING && t.len == 1 && t.ptr[0] == 'q') seen_id = 1;
  }
  assert_true(seen_shape && seen_id);
  assert_true(out[0] == 1 && out[3] == 4);
  assert_int_equal(r->depth, 0);
  /* a tensor followed by garbage: the reader notices on the next token */
  doc = "[[1,2],[3,4]] x";
  r = reader_for(doc, strlen(doc), 16);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_read_tensor(r, &t, ISV_FP32, out, 4), 0);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ERROR);
  /* nesting depth counts the levels above the tensor */
  doc = "[[[[1]]]]";
  r = reader_for(doc, strlen(doc), 3);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_next(r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_read_tensor(r, &t, ISV_FP32, out, 1), -1);
  assert_non_null(strstr(isv__json_error(r, NULL), "nesting deeper than 3 at offset 3"));
}

/* Scalars as request parameters: each kind, the widest integer first, and what is refused. */
static void test_to_param(void **state) {
  (void)state;
  char buf[] = "[true, \"s\\u00e9\", -5, 18446744073709551615, 2.5, 1e999, null, {}]";
  isv__json_reader r;
  isv__json_reader_init(&r, buf, strlen(buf), 8);
  isv__json_token t;
  isv_param p;
  assert_int_equal(isv__json_next(&r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_to_param(&t, &p), -1); /* not a scalar */
  isv__json_next(&r, &t);
  assert_int_equal(isv__json_to_param(&t, &p), 0);
  assert_true(p.type == ISV_PARAM_BOOL && p.v.b == 1);
  isv__json_next(&r, &t);
  assert_int_equal(isv__json_to_param(&t, &p), 0);
  assert_true(p.type == ISV_PARAM_STRING && p.v.s.len == 3 && memcmp(p.v.s.ptr, "s\xc3\xa9", 3) == 0);
  isv__json_next(&r, &t);
  assert_int_equal(isv__json_to_param(&t, &p), 0);
  assert_true(p.type == ISV_PARAM_INT64 && p.v.i64 == -5);
  isv__json_next(&r, &t);
  assert_int_equal(isv__json_to_param(&t, &p), 0);
  assert_true(p.type == ISV_PARAM_UINT64 && p.v.u64 == UINT64_MAX);
  isv__json_next(&r, &t);
  assert_int_equal(isv__json_to_param(&t, &p), 0);
  assert_true(p.type == ISV_PARAM_DOUBLE && p.v.d == 2.5);
  isv__json_next(&r, &t);
  assert_int_equal(isv__json_to_param(&t, &p), 0); /* strtod's rule: Infinity */
  assert_true(p.type == ISV_PARAM_DOUBLE && p.v.d > 1e308);
  isv__json_next(&r, &t);
  p.type = ISV_PARAM_BOOL;
  assert_int_equal(isv__json_to_param(&t, &p), -1); /* null: nothing written */
  assert_int_equal(p.type, ISV_PARAM_BOOL);
  assert_int_equal(isv__json_next(&r, &t), ISV__JSON_OBJECT_BEGIN);
  assert_int_equal(isv__json_to_param(&t, &p), -1);
}

static void test_tensor_random_fp(void **state) {
  (void)state;
  /* the tensor path and the token path agree with strtof/strtod */
  static char doc[1 << 15];
  static float f[1000];
  static double d[1000];
  char lits[1000][64];
  for (int round = 0; round < 20; round++) {
    size_t n = 0;
    doc[n++] = '[';
    for (int i = 0; i < 300; i++) {
      if (i) doc[n++] = (i % 7) ? ',' : ' ', doc[n - 1] == ' ' ? (void)(doc[n++] = ',') : (void)0;
      size_t l = random_literal(lits[i]);
      memcpy(doc + n, lits[i], l);
      n += l;
    }
    doc[n++] = ']';
    doc[n] = 0;
    assert_null(tensor(doc, ISV_FP32, f, 300, NULL));
    assert_null(tensor(doc, ISV_FP64, d, 300, NULL));
    for (int i = 0; i < 300; i++) {
      float fw = strtof(lits[i], NULL);
      double dw = strtod(lits[i], NULL);
      if (fbits(f[i]) != fbits(fw)) fail_msg("%s: %a vs %a", lits[i], (double)f[i], (double)fw);
      if (dbits(d[i]) != dbits(dw)) fail_msg("%s: %a vs %a", lits[i], d[i], dw);
    }
  }
}

/* isv__json_each_member: every member in order, a callback that reads on (an array), one that
 * stops, and the two ways a body is not a settings object. */
typedef struct members {
  char seen[128];
  int stop_at;
  int n;
} members;

static int on_member(void *ctx, const isv__json_token *key, isv__json_type type,
                     const isv__json_token *value, isv__json_reader *r) {
  members *m = ctx;
  size_t k = strlen(m->seen);
  snprintf(m->seen + k, sizeof m->seen - k, "%.*s:%d;", (int)key->len, key->ptr, (int)type);
  (void)value;
  if (type == ISV__JSON_ARRAY_BEGIN) {
    isv__json_token t;
    while (isv__json_next(r, &t) == ISV__JSON_NUMBER) {
    }
  }
  return ++m->n == m->stop_at ? 42 : 0;
}

static void each_member_walks_one_object(void **state) {
  (void)state;
  const char *msg;
  members m = {.stop_at = 0};
  char ok[] = "{\"a\":1,\"b\":[1,2],\"c\":\"x\"}  ";
  assert_int_equal(isv__json_each_member(ok, strlen(ok), 8, on_member, &m, &msg), 0);
  char want[64];
  snprintf(want, sizeof want, "a:%d;b:%d;c:%d;", ISV__JSON_NUMBER, ISV__JSON_ARRAY_BEGIN,
           ISV__JSON_STRING);
  assert_string_equal(m.seen, want);
  m = (members){.stop_at = 2};
  char stop[] = "{\"a\":1,\"b\":2,\"c\":3}";
  assert_int_equal(isv__json_each_member(stop, strlen(stop), 8, on_member, &m, &msg), 42);
  assert_int_equal(m.n, 2);
  m = (members){0};
  char arr[] = "[1]";
  assert_int_equal(isv__json_each_member(arr, strlen(arr), 8, on_member, &m, &msg),
                   ISV__JSON_NOT_OBJECT);
  assert_null(msg); /* JSON, just not an object */
  assert_int_equal(isv__json_each_member(NULL, 0, 8, on_member, &m, &msg), ISV__JSON_NOT_OBJECT);
  assert_non_null(msg);
  char bad[][24] = {"{\"a\":1", "{\"a\":1} x", "{\"a\" 1}", "{\"a\":[1,}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    m = (members){0};
    assert_int_equal(isv__json_each_member(bad[i], strlen(bad[i]), 8, on_member, &m, &msg),
                     ISV__JSON_MALFORMED);
    assert_non_null(msg);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_documents),
      cmocka_unit_test(test_invalid_documents),
      cmocka_unit_test(test_error_is_sticky_and_first_kept),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_tokens_and_offsets),
      cmocka_unit_test(test_compact_and_spaced_tokens_agree),
      cmocka_unit_test(test_key_in_takes_compact_keys_or_nothing),
      cmocka_unit_test(test_strings_in_place),
      cmocka_unit_test(test_skip),
      cmocka_unit_test(test_to_double_exact),
      cmocka_unit_test(test_to_float_exact),
      cmocka_unit_test(test_random_vs_strtod),
      cmocka_unit_test(test_half_vectors),
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_tensor_int_ranges),
      cmocka_unit_test(test_tensor_ints_near_and_far_from_the_end),
      cmocka_unit_test(test_tensor_ints_compact_and_spaced_agree),
      cmocka_unit_test(test_tensor_one_digit_runs_agree),
      cmocka_unit_test(test_small_uints_whole_or_nothing),
      cmocka_unit_test(test_strings_ended_at_every_position),
      cmocka_unit_test(test_tensor_floats),
      cmocka_unit_test(test_tensor_counts_and_shapes),
      cmocka_unit_test(test_tensor_bool_bytes),
      cmocka_unit_test(test_tensor_inside_document),
      cmocka_unit_test(test_tensor_random_fp),
      cmocka_unit_test(test_to_param),
      cmocka_unit_test(each_member_walks_one_object),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
