/* Strict streaming JSON reader (RFC 8259 + NaN/Infinity/-Infinity) and exact number parsing.
 *
 * Number conversion (decimal -> binary, correctly rounded, round to nearest even):
 *   1. The literal is scanned once into w (its first 19 significant digits, a uint64), q (a
 *      decimal exponent: value = w * 10^q) and a "truncated" flag (nonzero digits dropped).
 *   2. FP64: Clinger's fast path (w <= 2^53, |q| <= 22: one IEEE multiply or divide of two
 *      exact doubles, hence correctly rounded).  FP32: the same double, then converted to
 *      float; this is exact unless the double is itself a float midpoint (checked from its
 *      bits), because every float midpoint is a double and rounding is monotonic.
 *   3. Otherwise dec2bin(): w is multiplied by a 128-bit truncation of 10^q (table below),
 *      giving a 192-bit X with a proven error interval [X, X + 2^63) (or + 2^132 when
 *      digits were truncated).  Rounding is decided from the interval when no rounding
 *      boundary lies inside; when a representable value lies inside, that is the answer;
 *      when a MIDPOINT lies inside (rare: exact ties such as "16777217" for FP32, or inputs
 *      within 2^-70 relative of a tie), the literal's digits are compared exactly with the
 *      midpoint's full decimal expansion (small bignum, no allocation).
 *   The same dec2bin() rounds directly to FP32, FP16 and BF16, so there is never a double
 *   rounding (text -> double -> half).  No libc strtod is used, so no locale dependence. */
#include "json_reader.h"

#include "base64.h"
#include "datatype.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define ISV_LIKELY(x) __builtin_expect(!!(x), 1)
#define ISV_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ISV_INLINE static inline __attribute__((always_inline))
#define ISV_NOINLINE static __attribute__((noinline))
#else
#define ISV_LIKELY(x) (x)
#define ISV_UNLIKELY(x) (x)
#define ISV_INLINE static inline
#define ISV_NOINLINE static
#endif

__extension__ typedef unsigned __int128 isv_u128;

/* ---------------------------------------------------------------------------------------------
 * Powers of ten: isv__pow10_tab[k - ISV__POW10_KMIN] = floor(10^k * 2^(127 - E_k)) as
 * {high 64, low 64}, where E_k = floor(log2(10^k)) = (k * 1741647) >> 19; the top bit is set.
 * Generated exactly with Python integers for k in [-343, 324]. Shared with json_writer.c.
 * ------------------------------------------------------------------------------------------- */


const uint64_t isv__pow10_tab[668][2] = {
  {0xbf29dcaba82fdeaeu, 0x7432ee873880fc33u}, /* -343 */
  {0xeef453d6923bd65au, 0x113faa2906a13b3fu}, /* -342 */
  {0x9558b4661b6565f8u, 0x4ac7ca59a424c507u}, /* -341 */
  {0xbaaee17fa23ebf76u, 0x5d79bcf00d2df649u}, /* -340 */
  {0xe95a99df8ace6f53u, 0xf4d82c2c107973dcu}, /* -339 */
  {0x91d8a02bb6c10594u, 0x79071b9b8a4be869u}, /* -338 */
  {0xb64ec836a47146f9u, 0x9748e2826cdee284u}, /* -337 */
  {0xe3e27a444d8d98b7u, 0xfd1b1b2308169b25u}, /* -336 */
  {0x8e6d8c6ab0787f72u, 0xfe30f0f5e50e20f7u}, /* -335 */
  {0xb208ef855c969f4fu, 0xbdbd2d335e51a935u}, /* -334 */
  {0xde8b2b66b3bc4723u, 0xad2c788035e61382u}, /* -333 */
  {0x8b16fb203055ac76u, 0x4c3bcb5021afcc31u}, /* -332 */
  {0xaddcb9e83c6b1793u, 0xdf4abe242a1bbf3du}, /* -331 */
  {0xd953e8624b85dd78u, 0xd71d6dad34a2af0du}, /* -330 */
  {0x87d4713d6f33aa6bu, 0x8672648c40e5ad68u}, /* -329 */
  {0xa9c98d8ccb009506u, 0x680efdaf511f18c2u}, /* -328 */
  {0xd43bf0effdc0ba48u, 0x0212bd1b2566def2u}, /* -327 */
  {0x84a57695fe98746du, 0x014bb630f7604b57u}, /* -326 */
  {0xa5ced43b7e3e9188u, 0x419ea3bd35385e2du}, /* -325 */
  {0xcf42894a5dce35eau, 0x52064cac828675b9u}, /* -324 */
  {0x818995ce7aa0e1b2u, 0x7343efebd1940993u}, /* -323 */
  {0xa1ebfb4219491a1fu, 0x1014ebe6c5f90bf8u}, /* -322 */
  {0xca66fa129f9b60a6u, 0xd41a26e077774ef6u}, /* -321 */
  {0xfd00b897478238d0u, 0x8920b098955522b4u}, /* -320 */
  {0x9e20735e8cb16382u, 0x55b46e5f5d5535b0u}, /* -319 */
  {0xc5a890362fddbc62u, 0xeb2189f734aa831du}, /* -318 */
  {0xf712b443bbd52b7bu, 0xa5e9ec7501d523e4u}, /* -317 */
  {0x9a6bb0aa55653b2du, 0x47b233c92125366eu}, /* -316 */
  {0xc1069cd4eabe89f8u, 0x999ec0bb696e840au}, /* -315 */
  {0xf148440a256e2c76u, 0xc00670ea43ca250du}, /* -314 */
  {0x96cd2a865764dbcau, 0x380406926a5e5728u}, /* -313 */
  {0xbc807527ed3e12bcu, 0xc605083704f5ecf2u}, /* -312 */
  {0xeba09271e88d976bu, 0xf7864a44c633682eu}, /* -311 */
  {0x93445b8731587ea3u, 0x7ab3ee6afbe0211du}, /* -310 */
  {0xb8157268fdae9e4cu, 0x5960ea05bad82964u}, /* -309 */
  {0xe61acf033d1a45dfu, 0x6fb92487298e33bdu}, /* -308 */
  {0x8fd0c16206306babu, 0xa5d3b6d479f8e056u}, /* -307 */
  {0xb3c4f1ba87bc8696u, 0x8f48a4899877186cu}, /* -306 */
  {0xe0b62e2929aba83cu, 0x331acdabfe94de87u}, /* -305 */
  {0x8c71dcd9ba0b4925u, 0x9ff0c08b7f1d0b14u}, /* -304 */
  {0xaf8e5410288e1b6fu, 0x07ecf0ae5ee44dd9u}, /* -303 */
  {0xdb71e91432b1a24au, 0xc9e82cd9f69d6150u}, /* -302 */
  {0x892731ac9faf056eu, 0xbe311c083a225cd2u}, /* -301 */
  {0xab70fe17c79ac6cau, 0x6dbd630a48aaf406u}, /* -300 */
  {0xd64d3d9db981787du, 0x092cbbccdad5b108u}, /* -299 */
  {0x85f0468293f0eb4eu, 0x25bbf56008c58ea5u}, /* -298 */
  {0xa76c582338ed2621u, 0xaf2af2b80af6f24eu}, /* -297 */
  {0xd1476e2c07286faau, 0x1af5af660db4aee1u}, /* -296 */
  {0x82cca4db847945cau, 0x50d98d9fc890ed4du}, /* -295 */
  {0xa37fce126597973cu, 0xe50ff107bab528a0u}, /* -294 */
  {0xcc5fc196fefd7d0cu, 0x1e53ed49a96272c8u}, /* -293 */
  {0xff77b1fcbebcdc4fu, 0x25e8e89c13bb0f7au}, /* -292 */
  {0x9faacf3df73609b1u, 0x77b191618c54e9acu}, /* -291 */
  {0xc795830d75038c1du, 0xd59df5b9ef6a2417u}, /* -290 */
  {0xf97ae3d0d2446f25u, 0x4b0573286b44ad1du}, /* -289 */
  {0x9becce62836ac577u, 0x4ee367f9430aec32u}, /* -288 */
  {0xc2e801fb244576d5u, 0x229c41f793cda73fu}, /* -287 */
  {0xf3a20279ed56d48au, 0x6b43527578c1110fu}, /* -286 */
  {0x9845418c345644d6u, 0x830a13896b78aaa9u}, /* -285 */
  {0xbe5691ef416bd60cu, 0x23cc986bc656d553u}, /* -284 */
  {0xedec366b11c6cb8fu, 0x2cbfbe86b7ec8aa8u}, /* -283 */
  {0x94b3a202eb1c3f39u, 0x7bf7d71432f3d6a9u}, /* -282 */
  {0xb9e08a83a5e34f07u, 0xdaf5ccd93fb0cc53u}, /* -281 */
  {0xe858ad248f5c22c9u, 0xd1b3400f8f9cff68u}, /* -280 */
  {0x91376c36d99995beu, 0x23100809b9c21fa1u}, /* -279 */
  {0xb58547448ffffb2du, 0xabd40a0c2832a78au}, /* -278 */
  {0xe2e69915b3fff9f9u, 0x16c90c8f323f516cu}, /* -277 */
  {0x8dd01fad907ffc3bu, 0xae3da7d97f6792e3u}, /* -276 */
  {0xb1442798f49ffb4au, 0x99cd11cfdf41779cu}, /* -275 */
  {0xdd95317f31c7fa1du, 0x40405643d711d583u}, /* -274 */
  {0x8a7d3eef7f1cfc52u, 0x482835ea666b2572u}, /* -273 */
  {0xad1c8eab5ee43b66u, 0xda3243650005eecfu}, /* -272 */
  {0xd863b256369d4a40u, 0x90bed43e40076a82u}, /* -271 */
  {0x873e4f75e2224e68u, 0x5a7744a6e804a291u}, /* -270 */
  {0xa90de3535aaae202u, 0x711515d0a205cb36u}, /* -269 */
  {0xd3515c2831559a83u, 0x0d5a5b44ca873e03u}, /* -268 */
  {0x8412d9991ed58091u, 0xe858790afe9486c2u}, /* -267 */
  {0xa5178fff668ae0b6u, 0x626e974dbe39a872u}, /* -266 */
  {0xce5d73ff402d98e3u, 0xfb0a3d212dc8128fu}, /* -265 */
  {0x80fa687f881c7f8eu, 0x7ce66634bc9d0b99u}, /* -264 */
  {0xa139029f6a239f72u, 0x1c1fffc1ebc44e80u}, /* -263 */
  {0xc987434744ac874eu, 0xa327ffb266b56220u}, /* -262 */
  {0xfbe9141915d7a922u, 0x4bf1ff9f0062baa8u}, /* -261 */
  {0x9d71ac8fada6c9b5u, 0x6f773fc3603db4a9u}, /* -260 */
  {0xc4ce17b399107c22u, 0xcb550fb4384d21d3u}, /* -259 */
  {0xf6019da07f549b2bu, 0x7e2a53a146606a48u}, /* -258 */
  {0x99c102844f94e0fbu, 0x2eda7444cbfc426du}, /* -257 */
  {0xc0314325637a1939u, 0xfa911155fefb5308u}, /* -256 */
  {0xf03d93eebc589f88u, 0x793555ab7eba27cau}, /* -255 */
  {0x96267c7535b763b5u, 0x4bc1558b2f3458deu}, /* -254 */
  {0xbbb01b9283253ca2u, 0x9eb1aaedfb016f16u}, /* -253 */
  {0xea9c227723ee8bcbu, 0x465e15a979c1cadcu}, /* -252 */
  {0x92a1958a7675175fu, 0x0bfacd89ec191ec9u}, /* -251 */
  {0xb749faed14125d36u, 0xcef980ec671f667bu}, /* -250 */
  {0xe51c79a85916f484u, 0x82b7e12780e7401au}, /* -249 */
  {0x8f31cc0937ae58d2u, 0xd1b2ecb8b0908810u}, /* -248 */
  {0xb2fe3f0b8599ef07u, 0x861fa7e6dcb4aa15u}, /* -247 */
  {0xdfbdcece67006ac9u, 0x67a791e093e1d49au}, /* -246 */
  {0x8bd6a141006042bdu, 0xe0c8bb2c5c6d24e0u}, /* -245 */
  {0xaecc49914078536du, 0x58fae9f773886e18u}, /* -244 */
  {0xda7f5bf590966848u, 0xaf39a475506a899eu}, /* -243 */
  {0x888f99797a5e012du, 0x6d8406c952429603u}, /* -242 */
  {0xaab37fd7d8f58178u, 0xc8e5087ba6d33b83u}, /* -241 */
  {0xd5605fcdcf32e1d6u, 0xfb1e4a9a90880a64u}, /* -240 */
  {0x855c3be0a17fcd26u, 0x5cf2eea09a55067fu}, /* -239 */
  {0xa6b34ad8c9dfc06fu, 0xf42faa48c0ea481eu}, /* -238 */
  {0xd0601d8efc57b08bu, 0xf13b94daf124da26u}, /* -237 */
  {0x823c12795db6ce57u, 0x76c53d08d6b70858u}, /* -236 */
  {0xa2cb1717b52481edu, 0x54768c4b0c64ca6eu}, /* -235 */
  {0xcb7ddcdda26da268u, 0xa9942f5dcf7dfd09u}, /* -234 */
  {0xfe5d54150b090b02u, 0xd3f93b35435d7c4cu}, /* -233 */
  {0x9efa548d26e5a6e1u, 0xc47bc5014a1a6dafu}, /* -232 */
  {0xc6b8e9b0709f109au, 0x359ab6419ca1091bu}, /* -231 */
  {0xf867241c8cc6d4c0u, 0xc30163d203c94b62u}, /* -230 */
  {0x9b407691d7fc44f8u, 0x79e0de63425dcf1du}, /* -229 */
  {0xc21094364dfb5636u, 0x985915fc12f542e4u}, /* -228 */
  {0xf294b943e17a2bc4u, 0x3e6f5b7b17b2939du}, /* -227 */
  {0x979cf3ca6cec5b5au, 0xa705992ceecf9c42u}, /* -226 */
  {0xbd8430bd08277231u, 0x50c6ff782a838353u}, /* -225 */
  {0xece53cec4a314ebdu, 0xa4f8bf5635246428u}, /* -224 */
  {0x940f4613ae5ed136u, 0x871b7795e136be99u}, /* -223 */
  {0xb913179899f68584u, 0x28e2557b59846e3fu}, /* -222 */
  {0xe757dd7ec07426e5u, 0x331aeada2fe589cfu}, /* -221 */
  {0x9096ea6f3848984fu, 0x3ff0d2c85def7621u}, /* -220 */
  {0xb4bca50b065abe63u, 0x0fed077a756b53a9u}, /* -219 */
  {0xe1ebce4dc7f16dfbu, 0xd3e8495912c62894u}, /* -218 */
  {0x8d3360f09cf6e4bdu, 0x64712dd7abbbd95cu}, /* -217 */
  {0xb080392cc4349decu, 0xbd8d794d96aacfb3u}, /* -216 */
  {0xdca04777f541c567u, 0xecf0d7a0fc5583a0u}, /* -215 */
  {0x89e42caaf9491b60u, 0xf41686c49db57244u}, /* -214 */
  {0xac5d37d5b79b6239u, 0x311c2875c522ced5u}, /* -213 */
  {0xd77485cb25823ac7u, 0x7d633293366b828bu}, /* -212 */
  {0x86a8d39ef77164bcu, 0xae5dff9c02033197u}, /* -211 */
  {0xa8530886b54dbdebu, 0xd9f57f830283fdfcu}, /* -210 */
  {0xd267caa862a12d66u, 0xd072df63c324fd7bu}, /* -209 */
  {0x8380dea93da4bc60u, 0x4247cb9e59f71e6du}, /* -208 */
  {0xa46116538d0deb78u, 0x52d9be85f074e608u}, /* -207 */
  {0xcd795be870516656u, 0x67902e276c921f8bu}, /* -206 */
  {0x806bd9714632dff6u, 0x00ba1cd8a3db53b6u}, /* -205 */
  {0xa086cfcd97bf97f3u, 0x80e8a40eccd228a4u}, /* -204 */
  {0xc8a883c0fdaf7df0u, 0x6122cd128006b2cdu}, /* -203 */
  {0xfad2a4b13d1b5d6cu, 0x796b805720085f81u}, /* -202 */
  {0x9cc3a6eec6311a63u, 0xcbe3303674053bb0u}, /* -201 */
  {0xc3f490aa77bd60fcu, 0xbedbfc4411068a9cu}, /* -200 */
  {0xf4f1b4d515acb93bu, 0xee92fb5515482d44u}, /* -199 */
  {0x991711052d8bf3c5u, 0x751bdd152d4d1c4au}, /* -198 */
  {0xbf5cd54678eef0b6u, 0xd262d45a78a0635du}, /* -197 */
  {0xef340a98172aace4u, 0x86fb897116c87c34u}, /* -196 */
  {0x9580869f0e7aac0eu, 0xd45d35e6ae3d4da0u}, /* -195 */
  {0xbae0a846d2195712u, 0x8974836059cca109u}, /* -194 */
  {0xe998d258869facd7u, 0x2bd1a438703fc94bu}, /* -193 */
  {0x91ff83775423cc06u, 0x7b6306a34627ddcfu}, /* -192 */
  {0xb67f6455292cbf08u, 0x1a3bc84c17b1d542u}, /* -191 */
  {0xe41f3d6a7377eecau, 0x20caba5f1d9e4a93u}, /* -190 */
  {0x8e938662882af53eu, 0x547eb47b7282ee9cu}, /* -189 */
  {0xb23867fb2a35b28du, 0xe99e619a4f23aa43u}, /* -188 */
  {0xdec681f9f4c31f31u, 0x6405fa00e2ec94d4u}, /* -187 */
  {0x8b3c113c38f9f37eu, 0xde83bc408dd3dd04u}, /* -186 */
  {0xae0b158b4738705eu, 0x9624ab50b148d445u}, /* -185 */
  {0xd98ddaee19068c76u, 0x3badd624dd9b0957u}, /* -184 */
  {0x87f8a8d4cfa417c9u, 0xe54ca5d70a80e5d6u}, /* -183 */
  {0xa9f6d30a038d1dbcu, 0x5e9fcf4ccd211f4cu}, /* -182 */
  {0xd47487cc8470652bu, 0x7647c3200069671fu}, /* -181 */
  {0x84c8d4dfd2c63f3bu, 0x29ecd9f40041e073u}, /* -180 */
  {0xa5fb0a17c777cf09u, 0xf468107100525890u}, /* -179 */
  {0xcf79cc9db955c2ccu, 0x7182148d4066eeb4u}, /* -178 */
  {0x81ac1fe293d599bfu, 0xc6f14cd848405530u}, /* -177 */
  {0xa21727db38cb002fu, 0xb8ada00e5a506a7cu}, /* -176 */
  {0xca9cf1d206fdc03bu, 0xa6d90811f0e4851cu}, /* -175 */
  {0xfd442e4688bd304au, 0x908f4a166d1da663u}, /* -174 */
  {0x9e4a9cec15763e2eu, 0x9a598e4e043287feu}, /* -173 */
  {0xc5dd44271ad3cdbau, 0x40eff1e1853f29fdu}, /* -172 */
  {0xf7549530e188c128u, 0xd12bee59e68ef47cu}, /* -171 */
  {0x9a94dd3e8cf578b9u, 0x82bb74f8301958ceu}, /* -170 */
  {0xc13a148e3032d6e7u, 0xe36a52363c1faf01u}, /* -169 */
  {0xf18899b1bc3f8ca1u, 0xdc44e6c3cb279ac1u}, /* -168 */
  {0x96f5600f15a7b7e5u, 0x29ab103a5ef8c0b9u}, /* -167 */
  {0xbcb2b812db11a5deu, 0x7415d448f6b6f0e7u}, /* -166 */
  {0xebdf661791d60f56u, 0x111b495b3464ad21u}, /* -165 */
  {0x936b9fcebb25c995u, 0xcab10dd900beec34u}, /* -164 */
  {0xb84687c269ef3bfbu, 0x3d5d514f40eea742u}, /* -163 */
  {0xe65829b3046b0afau, 0x0cb4a5a3112a5112u}, /* -162 */
  {0x8ff71a0fe2c2e6dcu, 0x47f0e785eaba72abu}, /* -161 */
  {0xb3f4e093db73a093u, 0x59ed216765690f56u}, /* -160 */
  {0xe0f218b8d25088b8u, 0x306869c13ec3532cu}, /* -159 */
  {0x8c974f7383725573u, 0x1e414218c73a13fbu}, /* -158 */
  {0xafbd2350644eeacfu, 0xe5d1929ef90898fau}, /* -157 */
  {0xdbac6c247d62a583u, 0xdf45f746b74abf39u}, /* -156 */
  {0x894bc396ce5da772u, 0x6b8bba8c328eb783u}, /* -155 */
  {0xab9eb47c81f5114fu, 0x066ea92f3f326564u}, /* -154 */
  {0xd686619ba27255a2u, 0xc80a537b0efefebdu}, /* -153 */
  {0x8613fd0145877585u, 0xbd06742ce95f5f36u}, /* -152 */
  {0xa798fc4196e952e7u, 0x2c48113823b73704u}, /* -151 */
  {0xd17f3b51fca3a7a0u, 0xf75a15862ca504c5u}, /* -150 */
  {0x82ef85133de648c4u, 0x9a984d73dbe722fbu}, /* -149 */
  {0xa3ab66580d5fdaf5u, 0xc13e60d0d2e0ebbau}, /* -148 */
  {0xcc963fee10b7d1b3u, 0x318df905079926a8u}, /* -147 */
  {0xffbbcfe994e5c61fu, 0xfdf17746497f7052u}, /* -146 */
  {0x9fd561f1fd0f9bd3u, 0xfeb6ea8bedefa633u}, /* -145 */
  {0xc7caba6e7c5382c8u, 0xfe64a52ee96b8fc0u}, /* -144 */
  {0xf9bd690a1b68637bu, 0x3dfdce7aa3c673b0u}, /* -143 */
  {0x9c1661a651213e2du, 0x06bea10ca65c084eu}, /* -142 */
  {0xc31bfa0fe5698db8u, 0x486e494fcff30a62u}, /* -141 */
  {0xf3e2f893dec3f126u, 0x5a89dba3c3efccfau}, /* -140 */
  {0x986ddb5c6b3a76b7u, 0xf89629465a75e01cu}, /* -139 */
  {0xbe89523386091465u, 0xf6bbb397f1135823u}, /* -138 */
  {0xee2ba6c0678b597fu, 0x746aa07ded582e2cu}, /* -137 */
  {0x94db483840b717efu, 0xa8c2a44eb4571cdcu}, /* -136 */
  {0xba121a4650e4ddebu, 0x92f34d62616ce413u}, /* -135 */
  {0xe896a0d7e51e1566u, 0x77b020baf9c81d17u}, /* -134 */
  {0x915e2486ef32cd60u, 0x0ace1474dc1d122eu}, /* -133 */
  {0xb5b5ada8aaff80b8u, 0x0d819992132456bau}, /* -132 */
  {0xe3231912d5bf60e6u, 0x10e1fff697ed6c69u}, /* -131 */
  {0x8df5efabc5979c8fu, 0xca8d3ffa1ef463c1u}, /* -130 */
  {0xb1736b96b6fd83b3u, 0xbd308ff8a6b17cb2u}, /* -129 */
  {0xddd0467c64bce4a0u, 0xac7cb3f6d05ddbdeu}, /* -128 */
  {0x8aa22c0dbef60ee4u, 0x6bcdf07a423aa96bu}, /* -127 */
  {0xad4ab7112eb3929du, 0x86c16c98d2c953c6u}, /* -126 */
  {0xd89d64d57a607744u, 0xe871c7bf077ba8b7u}, /* -125 */
  {0x87625f056c7c4a8bu, 0x11471cd764ad4972u}, /* -124 */
  {0xa93af6c6c79b5d2du, 0xd598e40d3dd89bcfu}, /* -123 */
  {0xd389b47879823479u, 0x4aff1d108d4ec2c3u}, /* -122 */
  {0x843610cb4bf160cbu, 0xcedf722a585139bau}, /* -121 */
  {0xa54394fe1eedb8feu, 0xc2974eb4ee658828u}, /* -120 */
  {0xce947a3da6a9273eu, 0x733d226229feea32u}, /* -119 */
  {0x811ccc668829b887u, 0x0806357d5a3f525fu}, /* -118 */
  {0xa163ff802a3426a8u, 0xca07c2dcb0cf26f7u}, /* -117 */
  {0xc9bcff6034c13052u, 0xfc89b393dd02f0b5u}, /* -116 */
  {0xfc2c3f3841f17c67u, 0xbbac2078d443ace2u}, /* -115 */
  {0x9d9ba7832936edc0u, 0xd54b944b84aa4c0du}, /* -114 */
  {0xc5029163f384a931u, 0x0a9e795e65d4df11u}, /* -113 */
  {0xf64335bcf065d37du, 0x4d4617b5ff4a16d5u}, /* -112 */
  {0x99ea0196163fa42eu, 0x504bced1bf8e4e45u}, /* -111 */
  {0xc06481fb9bcf8d39u, 0xe45ec2862f71e1d6u}, /* -110 */
  {0xf07da27a82c37088u, 0x5d767327bb4e5a4cu}, /* -109 */
  {0x964e858c91ba2655u, 0x3a6a07f8d510f86fu}, /* -108 */
  {0xbbe226efb628afeau, 0x890489f70a55368bu}, /* -107 */
  {0xeadab0aba3b2dbe5u, 0x2b45ac74ccea842eu}, /* -106 */
  {0x92c8ae6b464fc96fu, 0x3b0b8bc90012929du}, /* -105 */
  {0xb77ada0617e3bbcbu, 0x09ce6ebb40173744u}, /* -104 */
  {0xe55990879ddcaabdu, 0xcc420a6a101d0515u}, /* -103 */
  {0x8f57fa54c2a9eab6u, 0x9fa946824a12232du}, /* -102 */
  {0xb32df8e9f3546564u, 0x47939822dc96abf9u}, /* -101 */
  {0xdff9772470297ebdu, 0x59787e2b93bc56f7u}, /* -100 */
  {0x8bfbea76c619ef36u, 0x57eb4edb3c55b65au}, /* -99 */
  {0xaefae51477a06b03u, 0xede622920b6b23f1u}, /* -98 */
  {0xdab99e59958885c4u, 0xe95fab368e45ecedu}, /* -97 */
  {0x88b402f7fd75539bu, 0x11dbcb0218ebb414u}, /* -96 */
  {0xaae103b5fcd2a881u, 0xd652bdc29f26a119u}, /* -95 */
  {0xd59944a37c0752a2u, 0x4be76d3346f0495fu}, /* -94 */
  {0x857fcae62d8493a5u, 0x6f70a4400c562ddbu}, /* -93 */
  {0xa6dfbd9fb8e5b88eu, 0xcb4ccd500f6bb952u}, /* -92 */
  {0xd097ad07a71f26b2u, 0x7e2000a41346a7a7u}, /* -91 */
  {0x825ecc24c873782fu, 0x8ed400668c0c28c8u}, /* -90 */
  {0xa2f67f2dfa90563bu, 0x728900802f0f32fau}, /* -89 */
  {0xcbb41ef979346bcau, 0x4f2b40a03ad2ffb9u}, /* -88 */
  {0xfea126b7d78186bcu, 0xe2f610c84987bfa8u}, /* -87 */
  {0x9f24b832e6b0f436u, 0x0dd9ca7d2df4d7c9u}, /* -86 */
  {0xc6ede63fa05d3143u, 0x91503d1c79720dbbu}, /* -85 */
  {0xf8a95fcf88747d94u, 0x75a44c6397ce912au}, /* -84 */
  {0x9b69dbe1b548ce7cu, 0xc986afbe3ee11abau}, /* -83 */
  {0xc24452da229b021bu, 0xfbe85badce996168u}, /* -82 */
  {0xf2d56790ab41c2a2u, 0xfae27299423fb9c3u}, /* -81 */
  {0x97c560ba6b0919a5u, 0xdccd879fc967d41au}, /* -80 */
  {0xbdb6b8e905cb600fu, 0x5400e987bbc1c920u}, /* -79 */
  {0xed246723473e3813u, 0x290123e9aab23b68u}, /* -78 */
  {0x9436c0760c86e30bu, 0xf9a0b6720aaf6521u}, /* -77 */
  {0xb94470938fa89bceu, 0xf808e40e8d5b3e69u}, /* -76 */
  {0xe7958cb87392c2c2u, 0xb60b1d1230b20e04u}, /* -75 */
  {0x90bd77f3483bb9b9u, 0xb1c6f22b5e6f48c2u}, /* -74 */
  {0xb4ecd5f01a4aa828u, 0x1e38aeb6360b1af3u}, /* -73 */
  {0xe2280b6c20dd5232u, 0x25c6da63c38de1b0u}, /* -72 */
  {0x8d590723948a535fu, 0x579c487e5a38ad0eu}, /* -71 */
  {0xb0af48ec79ace837u, 0x2d835a9df0c6d851u}, /* -70 */
  {0xdcdb1b2798182244u, 0xf8e431456cf88e65u}, /* -69 */
  {0x8a08f0f8bf0f156bu, 0x1b8e9ecb641b58ffu}, /* -68 */
  {0xac8b2d36eed2dac5u, 0xe272467e3d222f3fu}, /* -67 */
  {0xd7adf884aa879177u, 0x5b0ed81dcc6abb0fu}, /* -66 */
  {0x86ccbb52ea94baeau, 0x98e947129fc2b4e9u}, /* -65 */
  {0xa87fea27a539e9a5u, 0x3f2398d747b36224u}, /* -64 */
  {0xd29fe4b18e88640eu, 0x8eec7f0d19a03aadu}, /* -63 */
  {0x83a3eeeef9153e89u, 0x1953cf68300424acu}, /* -62 */
  {0xa48ceaaab75a8e2bu, 0x5fa8c3423c052dd7u}, /* -61 */
  {0xcdb02555653131b6u, 0x3792f412cb06794du}, /* -60 */
  {0x808e17555f3ebf11u, 0xe2bbd88bbee40bd0u}, /* -59 */
  {0xa0b19d2ab70e6ed6u, 0x5b6aceaeae9d0ec4u}, /* -58 */
  {0xc8de047564d20a8bu, 0xf245825a5a445275u}, /* -57 */
  {0xfb158592be068d2eu, 0xeed6e2f0f0d56712u}, /* -56 */
  {0x9ced737bb6c4183du, 0x55464dd69685606bu}, /* -55 */
  {0xc428d05aa4751e4cu, 0xaa97e14c3c26b886u}, /* -54 */
  {0xf53304714d9265dfu, 0xd53dd99f4b3066a8u}, /* -53 */
  {0x993fe2c6d07b7fabu, 0xe546a8038efe4029u}, /* -52 */
  {0xbf8fdb78849a5f96u, 0xde98520472bdd033u}, /* -51 */
  {0xef73d256a5c0f77cu, 0x963e66858f6d4440u}, /* -50 */
  {0x95a8637627989aadu, 0xdde7001379a44aa8u}, /* -49 */
  {0xbb127c53b17ec159u, 0x5560c018580d5d52u}, /* -48 */
  {0xe9d71b689dde71afu, 0xaab8f01e6e10b4a6u}, /* -47 */
  {0x9226712162ab070du, 0xcab3961304ca70e8u}, /* -46 */
  {0xb6b00d69bb55c8d1u, 0x3d607b97c5fd0d22u}, /* -45 */
  {0xe45c10c42a2b3b05u, 0x8cb89a7db77c506au}, /* -44 */
  {0x8eb98a7a9a5b04e3u, 0x77f3608e92adb242u}, /* -43 */
  {0xb267ed1940f1c61cu, 0x55f038b237591ed3u}, /* -42 */
  {0xdf01e85f912e37a3u, 0x6b6c46dec52f6688u}, /* -41 */
  {0x8b61313bbabce2c6u, 0x2323ac4b3b3da015u}, /* -40 */
  {0xae397d8aa96c1b77u, 0xabec975e0a0d081au}, /* -39 */
  {0xd9c7dced53c72255u, 0x96e7bd358c904a21u}, /* -38 */
  {0x881cea14545c7575u, 0x7e50d64177da2e54u}, /* -37 */
  {0xaa242499697392d2u, 0xdde50bd1d5d0b9e9u}, /* -36 */
  {0xd4ad2dbfc3d07787u, 0x955e4ec64b44e864u}, /* -35 */
  {0x84ec3c97da624ab4u, 0xbd5af13bef0b113eu}, /* -34 */
  {0xa6274bbdd0fadd61u, 0xecb1ad8aeacdd58eu}, /* -33 */
  {0xcfb11ead453994bau, 0x67de18eda5814af2u}, /* -32 */
  {0x81ceb32c4b43fcf4u, 0x80eacf948770ced7u}, /* -31 */
  {0xa2425ff75e14fc31u, 0xa1258379a94d028du}, /* -30 */
  {0xcad2f7f5359a3b3eu, 0x096ee45813a04330u}, /* -29 */
  {0xfd87b5f28300ca0du, 0x8bca9d6e188853fcu}, /* -28 */
  {0x9e74d1b791e07e48u, 0x775ea264cf55347du}, /* -27 */
  {0xc612062576589ddau, 0x95364afe032a819du}, /* -26 */
  {0xf79687aed3eec551u, 0x3a83ddbd83f52204u}, /* -25 */
  {0x9abe14cd44753b52u, 0xc4926a9672793542u}, /* -24 */
  {0xc16d9a0095928a27u, 0x75b7053c0f178293u}, /* -23 */
  {0xf1c90080baf72cb1u, 0x5324c68b12dd6338u}, /* -22 */
  {0x971da05074da7beeu, 0xd3f6fc16ebca5e03u}, /* -21 */
  {0xbce5086492111aeau, 0x88f4bb1ca6bcf584u}, /* -20 */
  {0xec1e4a7db69561a5u, 0x2b31e9e3d06c32e5u}, /* -19 */
  {0x9392ee8e921d5d07u, 0x3aff322e62439fcfu}, /* -18 */
  {0xb877aa3236a4b449u, 0x09befeb9fad487c2u}, /* -17 */
  {0xe69594bec44de15bu, 0x4c2ebe687989a9b3u}, /* -16 */
  {0x901d7cf73ab0acd9u, 0x0f9d37014bf60a10u}, /* -15 */
  {0xb424dc35095cd80fu, 0x538484c19ef38c94u}, /* -14 */
  {0xe12e13424bb40e13u, 0x2865a5f206b06fb9u}, /* -13 */
  {0x8cbccc096f5088cbu, 0xf93f87b7442e45d3u}, /* -12 */
  {0xafebff0bcb24aafeu, 0xf78f69a51539d748u}, /* -11 */
  {0xdbe6fecebdedd5beu, 0xb573440e5a884d1bu}, /* -10 */
  {0x89705f4136b4a597u, 0x31680a88f8953030u}, /* -9 */
  {0xabcc77118461cefcu, 0xfdc20d2b36ba7c3du}, /* -8 */
  {0xd6bf94d5e57a42bcu, 0x3d32907604691b4cu}, /* -7 */
  {0x8637bd05af6c69b5u, 0xa63f9a49c2c1b10fu}, /* -6 */
  {0xa7c5ac471b478423u, 0x0fcf80dc33721d53u}, /* -5 */
  {0xd1b71758e219652bu, 0xd3c36113404ea4a8u}, /* -4 */
  {0x83126e978d4fdf3bu, 0x645a1cac083126e9u}, /* -3 */
  {0xa3d70a3d70a3d70au, 0x3d70a3d70a3d70a3u}, /* -2 */
  {0xccccccccccccccccu, 0xccccccccccccccccu}, /* -1 */
  {0x8000000000000000u, 0x0000000000000000u}, /* 0 */
  {0xa000000000000000u, 0x0000000000000000u}, /* 1 */
  {0xc800000000000000u, 0x0000000000000000u}, /* 2 */
  {0xfa00000000000000u, 0x0000000000000000u}, /* 3 */
  {0x9c40000000000000u, 0x0000000000000000u}, /* 4 */
  {0xc350000000000000u, 0x0000000000000000u}, /* 5 */
  {0xf424000000000000u, 0x0000000000000000u}, /* 6 */
  {0x9896800000000000u, 0x0000000000000000u}, /* 7 */
  {0xbebc200000000000u, 0x0000000000000000u}, /* 8 */
  {0xee6b280000000000u, 0x0000000000000000u}, /* 9 */
  {0x9502f90000000000u, 0x0000000000000000u}, /* 10 */
  {0xba43b74000000000u, 0x0000000000000000u}, /* 11 */
  {0xe8d4a51000000000u, 0x0000000000000000u}, /* 12 */
  {0x9184e72a00000000u, 0x0000000000000000u}, /* 13 */
  {0xb5e620f480000000u, 0x0000000000000000u}, /* 14 */
  {0xe35fa931a0000000u, 0x0000000000000000u}, /* 15 */
  {0x8e1bc9bf04000000u, 0x0000000000000000u}, /* 16 */
  {0xb1a2bc2ec5000000u, 0x0000000000000000u}, /* 17 */
  {0xde0b6b3a76400000u, 0x0000000000000000u}, /* 18 */
  {0x8ac7230489e80000u, 0x0000000000000000u}, /* 19 */
  {0xad78ebc5ac620000u, 0x0000000000000000u}, /* 20 */
  {0xd8d726b7177a8000u, 0x0000000000000000u}, /* 21 */
  {0x878678326eac9000u, 0x0000000000000000u}, /* 22 */
  {0xa968163f0a57b400u, 0x0000000000000000u}, /* 23 */
  {0xd3c21bcecceda100u, 0x0000000000000000u}, /* 24 */
  {0x84595161401484a0u, 0x0000000000000000u}, /* 25 */
  {0xa56fa5b99019a5c8u, 0x0000000000000000u}, /* 26 */
  {0xcecb8f27f4200f3au, 0x0000000000000000u}, /* 27 */
  {0x813f3978f8940984u, 0x4000000000000000u}, /* 28 */
  {0xa18f07d736b90be5u, 0x5000000000000000u}, /* 29 */
  {0xc9f2c9cd04674edeu, 0xa400000000000000u}, /* 30 */
  {0xfc6f7c4045812296u, 0x4d00000000000000u}, /* 31 */
  {0x9dc5ada82b70b59du, 0xf020000000000000u}, /* 32 */
  {0xc5371912364ce305u, 0x6c28000000000000u}, /* 33 */
  {0xf684df56c3e01bc6u, 0xc732000000000000u}, /* 34 */
  {0x9a130b963a6c115cu, 0x3c7f400000000000u}, /* 35 */
  {0xc097ce7bc90715b3u, 0x4b9f100000000000u}, /* 36 */
  {0xf0bdc21abb48db20u, 0x1e86d40000000000u}, /* 37 */
  {0x96769950b50d88f4u, 0x1314448000000000u}, /* 38 */
  {0xbc143fa4e250eb31u, 0x17d955a000000000u}, /* 39 */
  {0xeb194f8e1ae525fdu, 0x5dcfab0800000000u}, /* 40 */
  {0x92efd1b8d0cf37beu, 0x5aa1cae500000000u}, /* 41 */
  {0xb7abc627050305adu, 0xf14a3d9e40000000u}, /* 42 */
  {0xe596b7b0c643c719u, 0x6d9ccd05d0000000u}, /* 43 */
  {0x8f7e32ce7bea5c6fu, 0xe4820023a2000000u}, /* 44 */
  {0xb35dbf821ae4f38bu, 0xdda2802c8a800000u}, /* 45 */
  {0xe0352f62a19e306eu, 0xd50b2037ad200000u}, /* 46 */
  {0x8c213d9da502de45u, 0x4526f422cc340000u}, /* 47 */
  {0xaf298d050e4395d6u, 0x9670b12b7f410000u}, /* 48 */
  {0xdaf3f04651d47b4cu, 0x3c0cdd765f114000u}, /* 49 */
  {0x88d8762bf324cd0fu, 0xa5880a69fb6ac800u}, /* 50 */
  {0xab0e93b6efee0053u, 0x8eea0d047a457a00u}, /* 51 */
  {0xd5d238a4abe98068u, 0x72a4904598d6d880u}, /* 52 */
  {0x85a36366eb71f041u, 0x47a6da2b7f864750u}, /* 53 */
  {0xa70c3c40a64e6c51u, 0x999090b65f67d924u}, /* 54 */
  {0xd0cf4b50cfe20765u, 0xfff4b4e3f741cf6du}, /* 55 */
  {0x82818f1281ed449fu, 0xbff8f10e7a8921a4u}, /* 56 */
  {0xa321f2d7226895c7u, 0xaff72d52192b6a0du}, /* 57 */
  {0xcbea6f8ceb02bb39u, 0x9bf4f8a69f764490u}, /* 58 */
  {0xfee50b7025c36a08u, 0x02f236d04753d5b4u}, /* 59 */
  {0x9f4f2726179a2245u, 0x01d762422c946590u}, /* 60 */
  {0xc722f0ef9d80aad6u, 0x424d3ad2b7b97ef5u}, /* 61 */
  {0xf8ebad2b84e0d58bu, 0xd2e0898765a7deb2u}, /* 62 */
  {0x9b934c3b330c8577u, 0x63cc55f49f88eb2fu}, /* 63 */
  {0xc2781f49ffcfa6d5u, 0x3cbf6b71c76b25fbu}, /* 64 */
  {0xf316271c7fc3908au, 0x8bef464e3945ef7au}, /* 65 */
  {0x97edd871cfda3a56u, 0x97758bf0e3cbb5acu}, /* 66 */
  {0xbde94e8e43d0c8ecu, 0x3d52eeed1cbea317u}, /* 67 */
  {0xed63a231d4c4fb27u, 0x4ca7aaa863ee4bddu}, /* 68 */
  {0x945e455f24fb1cf8u, 0x8fe8caa93e74ef6au}, /* 69 */
  {0xb975d6b6ee39e436u, 0xb3e2fd538e122b44u}, /* 70 */
  {0xe7d34c64a9c85d44u, 0x60dbbca87196b616u}, /* 71 */
  {0x90e40fbeea1d3a4au, 0xbc8955e946fe31cdu}, /* 72 */
  {0xb51d13aea4a488ddu, 0x6babab6398bdbe41u}, /* 73 */
  {0xe264589a4dcdab14u, 0xc696963c7eed2dd1u}, /* 74 */
  {0x8d7eb76070a08aecu, 0xfc1e1de5cf543ca2u}, /* 75 */
  {0xb0de65388cc8ada8u, 0x3b25a55f43294bcbu}, /* 76 */
  {0xdd15fe86affad912u, 0x49ef0eb713f39ebeu}, /* 77 */
  {0x8a2dbf142dfcc7abu, 0x6e3569326c784337u}, /* 78 */
  {0xacb92ed9397bf996u, 0x49c2c37f07965404u}, /* 79 */
  {0xd7e77a8f87daf7fbu, 0xdc33745ec97be906u}, /* 80 */
  {0x86f0ac99b4e8dafdu, 0x69a028bb3ded71a3u}, /* 81 */
  {0xa8acd7c0222311bcu, 0xc40832ea0d68ce0cu}, /* 82 */
  {0xd2d80db02aabd62bu, 0xf50a3fa490c30190u}, /* 83 */
  {0x83c7088e1aab65dbu, 0x792667c6da79e0fau}, /* 84 */
  {0xa4b8cab1a1563f52u, 0x577001b891185938u}, /* 85 */
  {0xcde6fd5e09abcf26u, 0xed4c0226b55e6f86u}, /* 86 */
  {0x80b05e5ac60b6178u, 0x544f8158315b05b4u}, /* 87 */
  {0xa0dc75f1778e39d6u, 0x696361ae3db1c721u}, /* 88 */
  {0xc913936dd571c84cu, 0x03bc3a19cd1e38e9u}, /* 89 */
  {0xfb5878494ace3a5fu, 0x04ab48a04065c723u}, /* 90 */
  {0x9d174b2dcec0e47bu, 0x62eb0d64283f9c76u}, /* 91 */
  {0xc45d1df942711d9au, 0x3ba5d0bd324f8394u}, /* 92 */
  {0xf5746577930d6500u, 0xca8f44ec7ee36479u}, /* 93 */
  {0x9968bf6abbe85f20u, 0x7e998b13cf4e1ecbu}, /* 94 */
  {0xbfc2ef456ae276e8u, 0x9e3fedd8c321a67eu}, /* 95 */
  {0xefb3ab16c59b14a2u, 0xc5cfe94ef3ea101eu}, /* 96 */
  {0x95d04aee3b80ece5u, 0xbba1f1d158724a12u}, /* 97 */
  {0xbb445da9ca61281fu, 0x2a8a6e45ae8edc97u}, /* 98 */
  {0xea1575143cf97226u, 0xf52d09d71a3293bdu}, /* 99 */
  {0x924d692ca61be758u, 0x593c2626705f9c56u}, /* 100 */
  {0xb6e0c377cfa2e12eu, 0x6f8b2fb00c77836cu}, /* 101 */
  {0xe498f455c38b997au, 0x0b6dfb9c0f956447u}, /* 102 */
  {0x8edf98b59a373fecu, 0x4724bd4189bd5eacu}, /* 103 */
  {0xb2977ee300c50fe7u, 0x58edec91ec2cb657u}, /* 104 */
  {0xdf3d5e9bc0f653e1u, 0x2f2967b66737e3edu}, /* 105 */
  {0x8b865b215899f46cu, 0xbd79e0d20082ee74u}, /* 106 */
  {0xae67f1e9aec07187u, 0xecd8590680a3aa11u}, /* 107 */
  {0xda01ee641a708de9u, 0xe80e6f4820cc9495u}, /* 108 */
  {0x884134fe908658b2u, 0x3109058d147fdcddu}, /* 109 */
  {0xaa51823e34a7eedeu, 0xbd4b46f0599fd415u}, /* 110 */
  {0xd4e5e2cdc1d1ea96u, 0x6c9e18ac7007c91au}, /* 111 */
  {0x850fadc09923329eu, 0x03e2cf6bc604ddb0u}, /* 112 */
  {0xa6539930bf6bff45u, 0x84db8346b786151cu}, /* 113 */
  {0xcfe87f7cef46ff16u, 0xe612641865679a63u}, /* 114 */
  {0x81f14fae158c5f6eu, 0x4fcb7e8f3f60c07eu}, /* 115 */
  {0xa26da3999aef7749u, 0xe3be5e330f38f09du}, /* 116 */
  {0xcb090c8001ab551cu, 0x5cadf5bfd3072cc5u}, /* 117 */
  {0xfdcb4fa002162a63u, 0x73d9732fc7c8f7f6u}, /* 118 */
  {0x9e9f11c4014dda7eu, 0x2867e7fddcdd9afau}, /* 119 */
  {0xc646d63501a1511du, 0xb281e1fd541501b8u}, /* 120 */
  {0xf7d88bc24209a565u, 0x1f225a7ca91a4226u}, /* 121 */
  {0x9ae757596946075fu, 0x3375788de9b06958u}, /* 122 */
  {0xc1a12d2fc3978937u, 0x0052d6b1641c83aeu}, /* 123 */
  {0xf209787bb47d6b84u, 0xc0678c5dbd23a49au}, /* 124 */
  {0x9745eb4d50ce6332u, 0xf840b7ba963646e0u}, /* 125 */
  {0xbd176620a501fbffu, 0xb650e5a93bc3d898u}, /* 126 */
  {0xec5d3fa8ce427affu, 0xa3e51f138ab4cebeu}, /* 127 */
  {0x93ba47c980e98cdfu, 0xc66f336c36b10137u}, /* 128 */
  {0xb8a8d9bbe123f017u, 0xb80b0047445d4184u}, /* 129 */
  {0xe6d3102ad96cec1du, 0xa60dc059157491e5u}, /* 130 */
  {0x9043ea1ac7e41392u, 0x87c89837ad68db2fu}, /* 131 */
  {0xb454e4a179dd1877u, 0x29babe4598c311fbu}, /* 132 */
  {0xe16a1dc9d8545e94u, 0xf4296dd6fef3d67au}, /* 133 */
  {0x8ce2529e2734bb1du, 0x1899e4a65f58660cu}, /* 134 */
  {0xb01ae745b101e9e4u, 0x5ec05dcff72e7f8fu}, /* 135 */
  {0xdc21a1171d42645du, 0x76707543f4fa1f73u}, /* 136 */
  {0x899504ae72497ebau, 0x6a06494a791c53a8u}, /* 137 */
  {0xabfa45da0edbde69u, 0x0487db9d17636892u}, /* 138 */
  {0xd6f8d7509292d603u, 0x45a9d2845d3c42b6u}, /* 139 */
  {0x865b86925b9bc5c2u, 0x0b8a2392ba45a9b2u}, /* 140 */
  {0xa7f26836f282b732u, 0x8e6cac7768d7141eu}, /* 141 */
  {0xd1ef0244af2364ffu, 0x3207d795430cd926u}, /* 142 */
  {0x8335616aed761f1fu, 0x7f44e6bd49e807b8u}, /* 143 */
  {0xa402b9c5a8d3a6e7u, 0x5f16206c9c6209a6u}, /* 144 */
  {0xcd036837130890a1u, 0x36dba887c37a8c0fu}, /* 145 */
  {0x802221226be55a64u, 0xc2494954da2c9789u}, /* 146 */
  {0xa02aa96b06deb0fdu, 0xf2db9baa10b7bd6cu}, /* 147 */
  {0xc83553c5c8965d3du, 0x6f92829494e5acc7u}, /* 148 */
  {0xfa42a8b73abbf48cu, 0xcb772339ba1f17f9u}, /* 149 */
  {0x9c69a97284b578d7u, 0xff2a760414536efbu}, /* 150 */
  {0xc38413cf25e2d70du, 0xfef5138519684abau}, /* 151 */
  {0xf46518c2ef5b8cd1u, 0x7eb258665fc25d69u}, /* 152 */
  {0x98bf2f79d5993802u, 0xef2f773ffbd97a61u}, /* 153 */
  {0xbeeefb584aff8603u, 0xaafb550ffacfd8fau}, /* 154 */
  {0xeeaaba2e5dbf6784u, 0x95ba2a53f983cf38u}, /* 155 */
  {0x952ab45cfa97a0b2u, 0xdd945a747bf26183u}, /* 156 */
  {0xba756174393d88dfu, 0x94f971119aeef9e4u}, /* 157 */
  {0xe912b9d1478ceb17u, 0x7a37cd5601aab85du}, /* 158 */
  {0x91abb422ccb812eeu, 0xac62e055c10ab33au}, /* 159 */
  {0xb616a12b7fe617aau, 0x577b986b314d6009u}, /* 160 */
  {0xe39c49765fdf9d94u, 0xed5a7e85fda0b80bu}, /* 161 */
  {0x8e41ade9fbebc27du, 0x14588f13be847307u}, /* 162 */
  {0xb1d219647ae6b31cu, 0x596eb2d8ae258fc8u}, /* 163 */
  {0xde469fbd99a05fe3u, 0x6fca5f8ed9aef3bbu}, /* 164 */
  {0x8aec23d680043beeu, 0x25de7bb9480d5854u}, /* 165 */
  {0xada72ccc20054ae9u, 0xaf561aa79a10ae6au}, /* 166 */
  {0xd910f7ff28069da4u, 0x1b2ba1518094da04u}, /* 167 */
  {0x87aa9aff79042286u, 0x90fb44d2f05d0842u}, /* 168 */
  {0xa99541bf57452b28u, 0x353a1607ac744a53u}, /* 169 */
  {0xd3fa922f2d1675f2u, 0x42889b8997915ce8u}, /* 170 */
  {0x847c9b5d7c2e09b7u, 0x69956135febada11u}, /* 171 */
  {0xa59bc234db398c25u, 0x43fab9837e699095u}, /* 172 */
  {0xcf02b2c21207ef2eu, 0x94f967e45e03f4bbu}, /* 173 */
  {0x8161afb94b44f57du, 0x1d1be0eebac278f5u}, /* 174 */
  {0xa1ba1ba79e1632dcu, 0x6462d92a69731732u}, /* 175 */
  {0xca28a291859bbf93u, 0x7d7b8f7503cfdcfeu}, /* 176 */
  {0xfcb2cb35e702af78u, 0x5cda735244c3d43eu}, /* 177 */
  {0x9defbf01b061adabu, 0x3a0888136afa64a7u}, /* 178 */
  {0xc56baec21c7a1916u, 0x088aaa1845b8fdd0u}, /* 179 */
  {0xf6c69a72a3989f5bu, 0x8aad549e57273d45u}, /* 180 */
  {0x9a3c2087a63f6399u, 0x36ac54e2f678864bu}, /* 181 */
  {0xc0cb28a98fcf3c7fu, 0x84576a1bb416a7ddu}, /* 182 */
  {0xf0fdf2d3f3c30b9fu, 0x656d44a2a11c51d5u}, /* 183 */
  {0x969eb7c47859e743u, 0x9f644ae5a4b1b325u}, /* 184 */
  {0xbc4665b596706114u, 0x873d5d9f0dde1feeu}, /* 185 */
  {0xeb57ff22fc0c7959u, 0xa90cb506d155a7eau}, /* 186 */
  {0x9316ff75dd87cbd8u, 0x09a7f12442d588f2u}, /* 187 */
  {0xb7dcbf5354e9beceu, 0x0c11ed6d538aeb2fu}, /* 188 */
  {0xe5d3ef282a242e81u, 0x8f1668c8a86da5fau}, /* 189 */
  {0x8fa475791a569d10u, 0xf96e017d694487bcu}, /* 190 */
  {0xb38d92d760ec4455u, 0x37c981dcc395a9acu}, /* 191 */
  {0xe070f78d3927556au, 0x85bbe253f47b1417u}, /* 192 */
  {0x8c469ab843b89562u, 0x93956d7478ccec8eu}, /* 193 */
  {0xaf58416654a6babbu, 0x387ac8d1970027b2u}, /* 194 */
  {0xdb2e51bfe9d0696au, 0x06997b05fcc0319eu}, /* 195 */
  {0x88fcf317f22241e2u, 0x441fece3bdf81f03u}, /* 196 */
  {0xab3c2fddeeaad25au, 0xd527e81cad7626c3u}, /* 197 */
  {0xd60b3bd56a5586f1u, 0x8a71e223d8d3b074u}, /* 198 */
  {0x85c7056562757456u, 0xf6872d5667844e49u}, /* 199 */
  {0xa738c6bebb12d16cu, 0xb428f8ac016561dbu}, /* 200 */
  {0xd106f86e69d785c7u, 0xe13336d701beba52u}, /* 201 */
  {0x82a45b450226b39cu, 0xecc0024661173473u}, /* 202 */
  {0xa34d721642b06084u, 0x27f002d7f95d0190u}, /* 203 */
  {0xcc20ce9bd35c78a5u, 0x31ec038df7b441f4u}, /* 204 */
  {0xff290242c83396ceu, 0x7e67047175a15271u}, /* 205 */
  {0x9f79a169bd203e41u, 0x0f0062c6e984d386u}, /* 206 */
  {0xc75809c42c684dd1u, 0x52c07b78a3e60868u}, /* 207 */
  {0xf92e0c3537826145u, 0xa7709a56ccdf8a82u}, /* 208 */
  {0x9bbcc7a142b17ccbu, 0x88a66076400bb691u}, /* 209 */
  {0xc2abf989935ddbfeu, 0x6acff893d00ea435u}, /* 210 */
  {0xf356f7ebf83552feu, 0x0583f6b8c4124d43u}, /* 211 */
  {0x98165af37b2153deu, 0xc3727a337a8b704au}, /* 212 */
  {0xbe1bf1b059e9a8d6u, 0x744f18c0592e4c5cu}, /* 213 */
  {0xeda2ee1c7064130cu, 0x1162def06f79df73u}, /* 214 */
  {0x9485d4d1c63e8be7u, 0x8addcb5645ac2ba8u}, /* 215 */
  {0xb9a74a0637ce2ee1u, 0x6d953e2bd7173692u}, /* 216 */
  {0xe8111c87c5c1ba99u, 0xc8fa8db6ccdd0437u}, /* 217 */
  {0x910ab1d4db9914a0u, 0x1d9c9892400a22a2u}, /* 218 */
  {0xb54d5e4a127f59c8u, 0x2503beb6d00cab4bu}, /* 219 */
  {0xe2a0b5dc971f303au, 0x2e44ae64840fd61du}, /* 220 */
  {0x8da471a9de737e24u, 0x5ceaecfed289e5d2u}, /* 221 */
  {0xb10d8e1456105dadu, 0x7425a83e872c5f47u}, /* 222 */
  {0xdd50f1996b947518u, 0xd12f124e28f77719u}, /* 223 */
  {0x8a5296ffe33cc92fu, 0x82bd6b70d99aaa6fu}, /* 224 */
  {0xace73cbfdc0bfb7bu, 0x636cc64d1001550bu}, /* 225 */
  {0xd8210befd30efa5au, 0x3c47f7e05401aa4eu}, /* 226 */
  {0x8714a775e3e95c78u, 0x65acfaec34810a71u}, /* 227 */
  {0xa8d9d1535ce3b396u, 0x7f1839a741a14d0du}, /* 228 */
  {0xd31045a8341ca07cu, 0x1ede48111209a050u}, /* 229 */
  {0x83ea2b892091e44du, 0x934aed0aab460432u}, /* 230 */
  {0xa4e4b66b68b65d60u, 0xf81da84d5617853fu}, /* 231 */
  {0xce1de40642e3f4b9u, 0x36251260ab9d668eu}, /* 232 */
  {0x80d2ae83e9ce78f3u, 0xc1d72b7c6b426019u}, /* 233 */
  {0xa1075a24e4421730u, 0xb24cf65b8612f81fu}, /* 234 */
  {0xc94930ae1d529cfcu, 0xdee033f26797b627u}, /* 235 */
  {0xfb9b7cd9a4a7443cu, 0x169840ef017da3b1u}, /* 236 */
  {0x9d412e0806e88aa5u, 0x8e1f289560ee864eu}, /* 237 */
  {0xc491798a08a2ad4eu, 0xf1a6f2bab92a27e2u}, /* 238 */
  {0xf5b5d7ec8acb58a2u, 0xae10af696774b1dbu}, /* 239 */
  {0x9991a6f3d6bf1765u, 0xacca6da1e0a8ef29u}, /* 240 */
  {0xbff610b0cc6edd3fu, 0x17fd090a58d32af3u}, /* 241 */
  {0xeff394dcff8a948eu, 0xddfc4b4cef07f5b0u}, /* 242 */
  {0x95f83d0a1fb69cd9u, 0x4abdaf101564f98eu}, /* 243 */
  {0xbb764c4ca7a4440fu, 0x9d6d1ad41abe37f1u}, /* 244 */
  {0xea53df5fd18d5513u, 0x84c86189216dc5edu}, /* 245 */
  {0x92746b9be2f8552cu, 0x32fd3cf5b4e49bb4u}, /* 246 */
  {0xb7118682dbb66a77u, 0x3fbc8c33221dc2a1u}, /* 247 */
  {0xe4d5e82392a40515u, 0x0fabaf3feaa5334au}, /* 248 */
  {0x8f05b1163ba6832du, 0x29cb4d87f2a7400eu}, /* 249 */
  {0xb2c71d5bca9023f8u, 0x743e20e9ef511012u}, /* 250 */
  {0xdf78e4b2bd342cf6u, 0x914da9246b255416u}, /* 251 */
  {0x8bab8eefb6409c1au, 0x1ad089b6c2f7548eu}, /* 252 */
  {0xae9672aba3d0c320u, 0xa184ac2473b529b1u}, /* 253 */
  {0xda3c0f568cc4f3e8u, 0xc9e5d72d90a2741eu}, /* 254 */
  {0x8865899617fb1871u, 0x7e2fa67c7a658892u}, /* 255 */
  {0xaa7eebfb9df9de8du, 0xddbb901b98feeab7u}, /* 256 */
  {0xd51ea6fa85785631u, 0x552a74227f3ea565u}, /* 257 */
  {0x8533285c936b35deu, 0xd53a88958f87275fu}, /* 258 */
  {0xa67ff273b8460356u, 0x8a892abaf368f137u}, /* 259 */
  {0xd01fef10a657842cu, 0x2d2b7569b0432d85u}, /* 260 */
  {0x8213f56a67f6b29bu, 0x9c3b29620e29fc73u}, /* 261 */
  {0xa298f2c501f45f42u, 0x8349f3ba91b47b8fu}, /* 262 */
  {0xcb3f2f7642717713u, 0x241c70a936219a73u}, /* 263 */
  {0xfe0efb53d30dd4d7u, 0xed238cd383aa0110u}, /* 264 */
  {0x9ec95d1463e8a506u, 0xf4363804324a40aau}, /* 265 */
  {0xc67bb4597ce2ce48u, 0xb143c6053edcd0d5u}, /* 266 */
  {0xf81aa16fdc1b81dau, 0xdd94b7868e94050au}, /* 267 */
  {0x9b10a4e5e9913128u, 0xca7cf2b4191c8326u}, /* 268 */
  {0xc1d4ce1f63f57d72u, 0xfd1c2f611f63a3f0u}, /* 269 */
  {0xf24a01a73cf2dccfu, 0xbc633b39673c8cecu}, /* 270 */
  {0x976e41088617ca01u, 0xd5be0503e085d813u}, /* 271 */
  {0xbd49d14aa79dbc82u, 0x4b2d8644d8a74e18u}, /* 272 */
  {0xec9c459d51852ba2u, 0xddf8e7d60ed1219eu}, /* 273 */
  {0x93e1ab8252f33b45u, 0xcabb90e5c942b503u}, /* 274 */
  {0xb8da1662e7b00a17u, 0x3d6a751f3b936243u}, /* 275 */
  {0xe7109bfba19c0c9du, 0x0cc512670a783ad4u}, /* 276 */
  {0x906a617d450187e2u, 0x27fb2b80668b24c5u}, /* 277 */
  {0xb484f9dc9641e9dau, 0xb1f9f660802dedf6u}, /* 278 */
  {0xe1a63853bbd26451u, 0x5e7873f8a0396973u}, /* 279 */
  {0x8d07e33455637eb2u, 0xdb0b487b6423e1e8u}, /* 280 */
  {0xb049dc016abc5e5fu, 0x91ce1a9a3d2cda62u}, /* 281 */
  {0xdc5c5301c56b75f7u, 0x7641a140cc7810fbu}, /* 282 */
  {0x89b9b3e11b6329bau, 0xa9e904c87fcb0a9du}, /* 283 */
  {0xac2820d9623bf429u, 0x546345fa9fbdcd44u}, /* 284 */
  {0xd732290fbacaf133u, 0xa97c177947ad4095u}, /* 285 */
  {0x867f59a9d4bed6c0u, 0x49ed8eabcccc485du}, /* 286 */
  {0xa81f301449ee8c70u, 0x5c68f256bfff5a74u}, /* 287 */
  {0xd226fc195c6a2f8cu, 0x73832eec6fff3111u}, /* 288 */
  {0x83585d8fd9c25db7u, 0xc831fd53c5ff7eabu}, /* 289 */
  {0xa42e74f3d032f525u, 0xba3e7ca8b77f5e55u}, /* 290 */
  {0xcd3a1230c43fb26fu, 0x28ce1bd2e55f35ebu}, /* 291 */
  {0x80444b5e7aa7cf85u, 0x7980d163cf5b81b3u}, /* 292 */
  {0xa0555e361951c366u, 0xd7e105bcc332621fu}, /* 293 */
  {0xc86ab5c39fa63440u, 0x8dd9472bf3fefaa7u}, /* 294 */
  {0xfa856334878fc150u, 0xb14f98f6f0feb951u}, /* 295 */
  {0x9c935e00d4b9d8d2u, 0x6ed1bf9a569f33d3u}, /* 296 */
  {0xc3b8358109e84f07u, 0x0a862f80ec4700c8u}, /* 297 */
  {0xf4a642e14c6262c8u, 0xcd27bb612758c0fau}, /* 298 */
  {0x98e7e9cccfbd7dbdu, 0x8038d51cb897789cu}, /* 299 */
  {0xbf21e44003acdd2cu, 0xe0470a63e6bd56c3u}, /* 300 */
  {0xeeea5d5004981478u, 0x1858ccfce06cac74u}, /* 301 */
  {0x95527a5202df0ccbu, 0x0f37801e0c43ebc8u}, /* 302 */
  {0xbaa718e68396cffdu, 0xd30560258f54e6bau}, /* 303 */
  {0xe950df20247c83fdu, 0x47c6b82ef32a2069u}, /* 304 */
  {0x91d28b7416cdd27eu, 0x4cdc331d57fa5441u}, /* 305 */
  {0xb6472e511c81471du, 0xe0133fe4adf8e952u}, /* 306 */
  {0xe3d8f9e563a198e5u, 0x58180fddd97723a6u}, /* 307 */
  {0x8e679c2f5e44ff8fu, 0x570f09eaa7ea7648u}, /* 308 */
  {0xb201833b35d63f73u, 0x2cd2cc6551e513dau}, /* 309 */
  {0xde81e40a034bcf4fu, 0xf8077f7ea65e58d1u}, /* 310 */
  {0x8b112e86420f6191u, 0xfb04afaf27faf782u}, /* 311 */
  {0xadd57a27d29339f6u, 0x79c5db9af1f9b563u}, /* 312 */
  {0xd94ad8b1c7380874u, 0x18375281ae7822bcu}, /* 313 */
  {0x87cec76f1c830548u, 0x8f2293910d0b15b5u}, /* 314 */
  {0xa9c2794ae3a3c69au, 0xb2eb3875504ddb22u}, /* 315 */
  {0xd433179d9c8cb841u, 0x5fa60692a46151ebu}, /* 316 */
  {0x849feec281d7f328u, 0xdbc7c41ba6bcd333u}, /* 317 */
  {0xa5c7ea73224deff3u, 0x12b9b522906c0800u}, /* 318 */
  {0xcf39e50feae16befu, 0xd768226b34870a00u}, /* 319 */
  {0x81842f29f2cce375u, 0xe6a1158300d46640u}, /* 320 */
  {0xa1e53af46f801c53u, 0x60495ae3c1097fd0u}, /* 321 */
  {0xca5e89b18b602368u, 0x385bb19cb14bdfc4u}, /* 322 */
  {0xfcf62c1dee382c42u, 0x46729e03dd9ed7b5u}, /* 323 */
  {0x9e19db92b4e31ba9u, 0x6c07a2c26a8346d1u}, /* 324 */
};

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */
static void set_errv(isv__json_reader *r, size_t offset, const char *fmt, va_list ap) {
  if (r->failed) return; /* keep the first error */
  r->failed = 1;
  r->err_offset = offset;
  int n = vsnprintf(r->err, sizeof r->err, fmt, ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof r->err) n = (int)sizeof r->err - 1;
  if (!strstr(r->err, "offset")) snprintf(r->err + n, sizeof r->err - (size_t)n, " at offset %zu", offset);
}

int isv__json_fail(isv__json_reader *r, size_t offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_errv(r, offset, fmt, ap);
  va_end(ap);
  return -1;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
ISV_NOINLINE int fail(isv__json_reader *r, size_t offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_errv(r, offset, fmt, ap);
  va_end(ap);
  return -1;
}

const char *isv__json_error(const isv__json_reader *r, size_t *offset) {
  if (!r->failed) return NULL;
  if (offset) *offset = r->err_offset;
  return r->err;
}

/* "'x'", "byte 0x01" or "end of input" for messages. */
static const char *describe(const isv__json_reader *r, size_t pos, char tmp[16]) {
  if (pos >= r->len) return "end of input";
  unsigned char c = (unsigned char)r->buf[pos];
  if (c >= 0x20 && c < 0x7F)
    snprintf(tmp, 16, "'%c'", c);
  else
    snprintf(tmp, 16, "byte 0x%02X", c);
  return tmp;
}

static int fail_unexpected(isv__json_reader *r, size_t pos, const char *expected) {
  char tmp[16];
  if (expected)
    return fail(r, pos, "unexpected %s at offset %zu, expected %s", describe(r, pos, tmp), pos,
                expected);
  return fail(r, pos, "unexpected %s at offset %zu", describe(r, pos, tmp), pos);
}

/* ---------------------------------------------------------------------------------------------
 * Character classes
 * ------------------------------------------------------------------------------------------- */
ISV_INLINE int is_ws(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
ISV_INLINE int is_digit(unsigned char c) { return (unsigned)(c - '0') < 10u; }

ISV_INLINE const char *skip_ws(const char *p, const char *end) {
  while (p < end && is_ws((unsigned char)*p)) p++;
  return p;
}

/* String byte classes: 0 plain, 1 '"', 2 '\\', 3 control, 4 non-ASCII. */
static const uint8_t str_class[256] = {
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};

/* Length of a valid UTF-8 sequence at s (s[0] >= 0x80), 0 if invalid (RFC 3629). */
ISV_INLINE size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0xC2) return 0;
  if (c < 0xE0) return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
  if (c < 0xF0) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0;
    if (c == 0xED && s[1] >= 0xA0) return 0;
    return 3;
  }
  if (c < 0xF5) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
      return 0;
    if (c == 0xF0 && s[1] < 0x90) return 0;
    if (c == 0xF4 && s[1] >= 0x90) return 0;
    return 4;
  }
  return 0;
}

static int hex4(const unsigned char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = s[i], d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      d = (c | 0x20) - 'a' + 10;
    else
      return -1;
    v = v << 4 | d;
  }
  *out = v;
  return 0;
}

/* Scan the string whose opening quote is at offset `start`. When `unescape` is set and the
 * string has escapes, it is rewritten in place. On success (*ptr, *len) is the (unescaped when
 * asked) content and *end the offset one past the closing quote. */
static int scan_string(isv__json_reader *r, size_t start, int unescape, const char **ptr,
                       size_t *len, size_t *end) {
  unsigned char *s = (unsigned char *)r->buf;
  const size_t n = r->len;
  size_t i = start + 1;
  size_t w = 0; /* write index; only meaningful once an escape was seen (esc) */
  int esc = 0;
  for (;;) {
    /* Plain run. */
    size_t j = i;
    while (j < n && str_class[s[j]] == 0) j++;
    if (esc && unescape && j > i) {
      memmove(s + w, s + i, j - i);
      w += j - i;
    }
    i = j;
    if (i >= n) return fail(r, start, "unterminated string starting at offset %zu", start);
    switch (str_class[s[i]]) {
      case 1: /* closing quote */
        *ptr = (const char *)s + start + 1;
        *len = (esc && unescape) ? w - (start + 1) : i - (start + 1);
        *end = i + 1;
        return 0;
      case 3:
        return fail(r, i, "control character 0x%02X in string at offset %zu", s[i], i);
      case 4: {
        size_t l = utf8_seq(s + i, n - i);
        if (!l) return fail(r, i, "invalid UTF-8 in string at offset %zu", i);
        if (esc && unescape) memmove(s + w, s + i, l);
        w += l;
        i += l;
        break;
      }
      default: { /* backslash */
        if (!esc) {
          esc = 1;
          w = i;
        }
        if (i + 1 >= n) return fail(r, start, "unterminated string starting at offset %zu", start);
        unsigned char c = s[i + 1], out = 0;
        switch (c) {
          case '"': out = '"'; break;
          case '\\': out = '\\'; break;
          case '/': out = '/'; break;
          case 'b': out = '\b'; break;
          case 'f': out = '\f'; break;
          case 'n': out = '\n'; break;
          case 'r': out = '\r'; break;
          case 't': out = '\t'; break;
          case 'u': {
            unsigned cp, lo;
            if (i + 6 > n || hex4(s + i + 2, &cp))
              return fail(r, i, "invalid \\u escape in string at offset %zu", i);
            size_t adv = 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
              return fail(r, i, "lone surrogate \\u%04X in string at offset %zu", cp, i);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (i + 12 > n || s[i + 6] != '\\' || s[i + 7] != 'u' || hex4(s + i + 8, &lo) ||
                  lo < 0xDC00 || lo > 0xDFFF)
                return fail(r, i, "lone surrogate \\u%04X in string at offset %zu", cp, i);
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              adv = 12;
            }
            if (unescape) {
              if (cp < 0x80) {
                s[w++] = (unsigned char)cp;
              } else if (cp < 0x800) {
                s[w++] = (unsigned char)(0xC0 | cp >> 6);
                s[w++] = (unsigned char)(0x80 | (cp & 0x3F));
              } else if (cp < 0x10000) {
                s[w++] = (unsigned char)(0xE0 | cp >> 12);
                s[w++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                s[w++] = (unsigned char)(0x80 | (cp & 0x3F));
              } else {
                s[w++] = (unsigned char)(0xF0 | cp >> 18);
                s[w++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                s[w++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                s[w++] = (unsigned char)(0x80 | (cp & 0x3F));
              }
            }
            i += adv;
            continue;
          }
          default:
            if (c >= 0x20 && c < 0x7F)
              return fail(r, i, "invalid escape \\%c in string at offset %zu", c, i);
            return fail(r, i, "invalid escape (backslash then byte 0x%02X) in string at offset %zu",
                        c, i);
        }
        if (unescape) s[w++] = out;
        i += 2;
        break;
      }
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Number literals
 * ------------------------------------------------------------------------------------------- */
enum { NUM_FINITE = 0, NUM_NAN = 1, NUM_INF = 2 };
enum {
  NERR_NONE = 0,
  NERR_SYNTAX,      /* not a number at all */
  NERR_LEADING0,    /* 0 followed by a digit */
  NERR_FRAC,        /* '.' not followed by a digit */
  NERR_EXP          /* 'e' not followed by a digit */
};

typedef struct numlit {
  uint64_t w;      /* first 19 significant digits */
  int64_t q;       /* value ~= w * 10^q */
  int neg;
  int special;     /* NUM_* */
  int truncated;   /* nonzero digits were dropped from w */
  int is_int;      /* no fraction, no exponent */
  const char *start, *end;
} numlit;

#define EXP_SAT 100000000000LL

/* SWAR: the number of leading ASCII digits in the 8 bytes at p (0..8) and their value. */
ISV_INLINE int swar_digits(const char *p, uint64_t *val) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  uint64_t x = v ^ 0x3030303030303030u; /* digits become 0..9 */
  /* high bit of each byte that is not a digit (carries only ever leave non-digit bytes, so
   * the first non-digit byte is always flagged correctly) */
  uint64_t nd = ((x + 0x7676767676767676u) | x) & 0x8080808080808080u;
  int k = nd ? __builtin_ctzll(nd) >> 3 : 8;
  if (k == 0) {
    *val = 0;
    return 0;
  }
  x <<= 8 * (8 - k); /* drop the non-digits; the vacated low bytes are leading zeros */
  x = (x * 10) + (x >> 8);
  x = (((x & 0x000000FF000000FFu) * (100 + (UINT64_C(1000000) << 32))) +
       (((x >> 16) & 0x000000FF000000FFu) * (1 + (UINT64_C(10000) << 32)))) >> 32;
  *val = x;
  return k;
}

static const uint64_t p10u[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

/* Scan one number literal at p (p < end). Returns the end, or NULL with *err set (and the
 * returned error position in *errp). */
ISV_INLINE const char *scan_num(const char *p, const char *end, numlit *n, int *err,
                                const char **errp) {
  n->start = p;
  n->neg = 0;
  n->special = NUM_FINITE;
  n->truncated = 0;
  n->is_int = 1;
  if (*p == '-') {
    n->neg = 1;
    p++;
    if (ISV_UNLIKELY(p >= end)) goto syntax;
  }
  uint64_t w = 0;
  int64_t q = 0;
  int nd = 0;
  unsigned char c = (unsigned char)*p;
  if (c == '0') {
    p++;
    if (ISV_UNLIKELY(p < end && is_digit((unsigned char)*p))) {
      *err = NERR_LEADING0;
      *errp = p - 1;
      return NULL;
    }
  } else if (ISV_LIKELY(is_digit(c))) {
    while (end - p >= 8 && nd <= 11) {
      uint64_t v;
      int k = swar_digits(p, &v);
      w = w * p10u[k] + v;
      nd += k;
      p += k;
      if (k < 8) goto int_done;
    }
    while (p < end && is_digit((unsigned char)*p)) {
      unsigned d = (unsigned char)*p - '0';
      if (ISV_LIKELY(nd < 19)) {
        w = w * 10 + d;
        nd++;
      } else {
        q++;
        n->truncated |= (d != 0);
      }
      p++;
    }
  int_done:;
  } else if (c == 'I') {
    if (end - p >= 8 && memcmp(p, "Infinity", 8) == 0) {
      n->special = NUM_INF;
      n->is_int = 0;
      n->w = 0;
      n->q = 0;
      n->end = p + 8;
      return p + 8;
    }
    goto syntax;
  } else if (c == 'N' && !n->neg) {
    if (end - p >= 3 && memcmp(p, "NaN", 3) == 0) {
      n->special = NUM_NAN;
      n->is_int = 0;
      n->w = 0;
      n->q = 0;
      n->end = p + 3;
      return p + 3;
    }
    goto syntax;
  } else {
    goto syntax;
  }
  if (p < end && *p == '.') {
    n->is_int = 0;
    p++;
    if (ISV_UNLIKELY(p >= end || !is_digit((unsigned char)*p))) {
      *err = NERR_FRAC;
      *errp = p;
      return NULL;
    }
    if (w == 0) { /* skip leading zeros of the fraction: they are not significant */
      while (p < end && *p == '0') {
        p++;
        q--;
      }
    }
    while (end - p >= 8 && nd <= 11) {
      uint64_t v;
      int k = swar_digits(p, &v);
      w = w * p10u[k] + v;
      nd += k;
      q -= k;
      p += k;
      if (k < 8) goto frac_done;
    }
    while (p < end && is_digit((unsigned char)*p)) {
      unsigned d = (unsigned char)*p - '0';
      if (ISV_LIKELY(nd < 19)) {
        w = w * 10 + d;
        nd++;
        q--;
      } else {
        n->truncated |= (d != 0);
      }
      p++;
    }
  frac_done:;
  }
  if (p < end && (*p | 0x20) == 'e') {
    n->is_int = 0;
    p++;
    int eneg = 0;
    if (p < end && (*p == '+' || *p == '-')) {
      eneg = (*p == '-');
      p++;
    }
    if (ISV_UNLIKELY(p >= end || !is_digit((unsigned char)*p))) {
      *err = NERR_EXP;
      *errp = p;
      return NULL;
    }
    int64_t e = 0;
    do {
      if (e < EXP_SAT) e = e * 10 + ((unsigned char)*p - '0');
      p++;
    } while (p < end && is_digit((unsigned char)*p));
    q += eneg ? -e : e;
  }
  n->w = w;
  n->q = q;
  n->end = p;
  return p;
syntax:
  *err = NERR_SYNTAX;
  *errp = n->start;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Exact comparison of a decimal literal with a binary midpoint B * 2^eB (the rare fallback).
 * ------------------------------------------------------------------------------------------- */
#define BIG_LIMBS 90 /* 2880 bits: enough for 2^55 * 5^1075 */

typedef struct big {
  uint32_t d[BIG_LIMBS];
  int n;
} big;

static void big_mul_small(big *b, uint32_t m) {
  uint64_t carry = 0;
  for (int i = 0; i < b->n; i++) {
    uint64_t t = (uint64_t)b->d[i] * m + carry;
    b->d[i] = (uint32_t)t;
    carry = t >> 32;
  }
  if (carry && b->n < BIG_LIMBS) b->d[b->n++] = (uint32_t)carry;
}

static void big_shl(big *b, int s) {
  int limbs = s / 32, bits = s % 32;
  if (limbs + b->n + 1 > BIG_LIMBS) limbs = BIG_LIMBS - b->n - 1; /* cannot happen */
  if (bits) {
    uint32_t carry = 0;
    for (int i = 0; i < b->n; i++) {
      uint32_t v = b->d[i];
      b->d[i] = v << bits | carry;
      carry = v >> (32 - bits);
    }
    if (carry) b->d[b->n++] = carry;
  }
  if (limbs) {
    memmove(b->d + limbs, b->d, (size_t)b->n * 4);
    memset(b->d, 0, (size_t)limbs * 4);
    b->n += limbs;
  }
}

/* Divide by 1e9 in place; returns the remainder. */
static uint32_t big_div1e9(big *b) {
  uint64_t rem = 0;
  for (int i = b->n - 1; i >= 0; i--) {
    uint64_t cur = rem << 32 | b->d[i];
    b->d[i] = (uint32_t)(cur / 1000000000u);
    rem = cur % 1000000000u;
  }
  while (b->n > 0 && b->d[b->n - 1] == 0) b->n--;
  return (uint32_t)rem;
}

/* Sign of (|literal| - B * 2^eB). The literal is finite and nonzero. */
ISV_NOINLINE int cmp_exact(const char *lit, const char *lit_end, uint64_t B, int eB) {
  /* Decimal digits of the midpoint, most significant first. */
  big b;
  b.d[0] = (uint32_t)B;
  b.d[1] = (uint32_t)(B >> 32);
  b.n = b.d[1] ? 2 : 1;
  int64_t dexp = 0;
  if (eB >= 0) {
    big_shl(&b, eB);
  } else {
    int k = -eB;
    while (k >= 13) {
      big_mul_small(&b, 1220703125u); /* 5^13 */
      k -= 13;
    }
    uint32_t p5 = 1;
    while (k-- > 0) p5 *= 5;
    big_mul_small(&b, p5);
    dexp = eB;
  }
  char digs[900];
  int nd = 0;
  char chunk[BIG_LIMBS * 10 / 9 + 2][9];
  int nchunks = 0;
  while (b.n > 0) {
    uint32_t r = big_div1e9(&b);
    for (int i = 8; i >= 0; i--) {
      chunk[nchunks][i] = (char)('0' + r % 10);
      r /= 10;
    }
    nchunks++;
  }
  for (int c = nchunks - 1; c >= 0; c--)
    for (int i = 0; i < 9; i++) {
      if (nd == 0 && chunk[c][i] == '0') continue;
      digs[nd++] = chunk[c][i];
    }
  int64_t lb = nd - 1 + dexp; /* exponent of the leading digit */

  /* The literal's digits. */
  const char *p = lit;
  if (*p == '-') p++;
  const char *dstart = p;
  int64_t int_digits = 0;
  while (p < lit_end && is_digit((unsigned char)*p)) {
    p++;
    int_digits++;
  }
  const char *frac = NULL, *frac_end = p;
  if (p < lit_end && *p == '.') {
    frac = ++p;
    while (p < lit_end && is_digit((unsigned char)*p)) p++;
    frac_end = p;
  }
  int64_t E = 0;
  if (p < lit_end && (*p | 0x20) == 'e') {
    p++;
    int eneg = 0;
    if (*p == '+' || *p == '-') eneg = (*p++ == '-');
    while (p < lit_end && is_digit((unsigned char)*p)) {
      if (E < EXP_SAT) E = E * 10 + (*p - '0');
      p++;
    }
    if (eneg) E = -E;
  }
  /* Iterate over all digits (integer then fraction), skipping leading zeros. */
  const char *ip = dstart, *ie = dstart + int_digits;
  int64_t idx = 0;
  const char *cur = ip;
  int in_frac = 0;
#define NEXT_DIGIT()                              \
  do {                                            \
    cur++;                                        \
    if (!in_frac && cur >= ie) {                  \
      in_frac = 1;                                \
      cur = frac ? frac : frac_end;               \
    }                                             \
  } while (0)
  if (int_digits == 0) { in_frac = 1; cur = frac ? frac : frac_end; }
  while ((in_frac ? cur < frac_end : 1) && *cur == '0') {
    NEXT_DIGIT();
    idx++;
  }
  /* cur is the first nonzero digit, at index idx of the digit sequence. */
  int64_t lx = int_digits - 1 - idx + E;
  if (lx != lb) return lx > lb ? 1 : -1;
  int k = 0;
  for (;;) {
    int xd_end = in_frac && cur >= frac_end;
    if (xd_end) {
      for (; k < nd; k++)
        if (digs[k] != '0') return -1;
      return 0;
    }
    if (k >= nd) {
      /* Midpoint exhausted: any nonzero remaining literal digit makes it larger. */
      while (!(in_frac && cur >= frac_end)) {
        if (*cur != '0') return 1;
        NEXT_DIGIT();
      }
      return 0;
    }
    if (*cur != digs[k]) return *cur > digs[k] ? 1 : -1;
    k++;
    NEXT_DIGIT();
  }
#undef NEXT_DIGIT
}

/* ---------------------------------------------------------------------------------------------
 * Decimal -> binary, correctly rounded (nearest even), for a format with P significand bits
 * (hidden bit included) and EB exponent bits. w != 0. Returns the bits without the sign.
 * ------------------------------------------------------------------------------------------- */
ISV_INLINE uint64_t dec2bin(const numlit *n, const int P, const int EB) {
  const int bias = (1 << (EB - 1)) - 1;
  const int emin = 1 - bias;
  const uint64_t inf = (uint64_t)((1u << EB) - 1) << (P - 1);
  int64_t q = n->q;
  if (q < ISV__POW10_KMIN) return 0; /* w * 10^q < 10^-324: below half of every subnormal */
  if (q > 308) return inf;
  uint64_t w = n->w;
  int truncated = n->truncated;
  if (ISV_UNLIKELY(w >> 63)) { /* 19 digits above 2^63: drop one more digit */
    truncated |= (w % 10 != 0);
    w /= 10;
    q++;
  }
  const int lz = __builtin_clzll(w) - 1;
  const uint64_t wn = w << lz; /* in [2^62, 2^63) */
  const uint64_t *T = isv__pow10_tab[q - ISV__POW10_KMIN];
  const isv_u128 a = (isv_u128)wn * T[1];
  const isv_u128 b = (isv_u128)wn * T[0];
  const uint64_t x0 = (uint64_t)a;
  const isv_u128 mid = (isv_u128)(uint64_t)b + (uint64_t)(a >> 64);
  const uint64_t x1 = (uint64_t)mid;
  const uint64_t x2 = (uint64_t)(b >> 64) + (uint64_t)(mid >> 64);
  /* The exact value is Y * 2^S with Y in [X, X + 2^63), or [X, X + 2^132) when digits were
   * dropped (w+1 instead of w and T+1 instead of T bound the error). */
  const int Eq = (int)((q * 1741647) >> 19);
  const int S = Eq - 127 - lz;
  const int topbit = (x2 >> 62) ? 190 : 189;
  const int be = topbit + S; /* unbiased exponent of X */
  if (be > bias) return inf;
  const int ue = (be < emin ? emin : be) - (P - 1); /* exponent of one ulp */
  const int p = ue - S - 1;                         /* bit position of half an ulp in X */
  if (p >= topbit + 2) return 0;
  const int sh = p - 128; /* p is in [128, 191] for every supported format */
  const uint64_t RL = x2 >> sh;
  const int L_on_boundary = ((x2 & ((UINT64_C(1) << sh) - 1)) | x1 | x0) == 0;
  uint64_t u0 = x0 + (UINT64_C(1) << 63);
  uint64_t c0 = u0 < x0;
  uint64_t u1 = x1 + c0;
  uint64_t u2 = x2 + (u1 < c0) + (truncated ? 16u : 0u);
  const uint64_t RU = u2 >> sh;
  uint64_t M, B;
  if (RL == RU) {
    if (ISV_LIKELY(!((RL & 1) && L_on_boundary))) {
      M = (RL + 1) >> 1;
      goto assemble;
    }
    B = RL;
  } else {
    /* One boundary (RU * 2^p) inside: a representable value (even) or a midpoint (odd). */
    if (!(RU & 1)) {
      M = RU >> 1;
      goto assemble;
    }
    B = RU;
  }
  {
    int c = cmp_exact(n->start, n->end, B, p + S);
    uint64_t down = (B - 1) >> 1, up = down + 1;
    M = c < 0 ? down : c > 0 ? up : ((down & 1) ? up : down);
  }
assemble:;
  uint64_t bits = be < emin ? M : ((uint64_t)(be + bias - 1) << (P - 1)) + M;
  return bits > inf ? inf : bits;
}

static const double p10d[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

ISV_INLINE uint64_t dbl_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
ISV_INLINE double bits_dbl(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
ISV_INLINE float bits_flt(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

ISV_INLINE double lit_to_f64(const numlit *n) {
  uint64_t s = (uint64_t)n->neg << 63;
  if (ISV_UNLIKELY(n->special)) return bits_dbl(s | (n->special == NUM_NAN ? 0x7FF8000000000000u : 0x7FF0000000000000u));
  if (n->w == 0) return bits_dbl(s);
  if (ISV_LIKELY(!n->truncated && n->w <= (UINT64_C(1) << 53) && n->q >= -22 && n->q <= 22)) {
    double d = (double)n->w;
    d = n->q < 0 ? d / p10d[-n->q] : d * p10d[n->q];
    return n->neg ? -d : d;
  }
  return bits_dbl(s | dec2bin(n, 53, 11));
}

ISV_INLINE float lit_to_f32(const numlit *n) {
  uint32_t s = (uint32_t)n->neg << 31;
  if (ISV_UNLIKELY(n->special)) return bits_flt(s | (n->special == NUM_NAN ? 0x7FC00000u : 0x7F800000u));
  if (n->w == 0) return bits_flt(s);
  if (ISV_LIKELY(!n->truncated && n->w <= (UINT64_C(1) << 53) && n->q >= -22 && n->q <= 22)) {
    double d = (double)n->w;
    d = n->q < 0 ? d / p10d[-n->q] : d * p10d[n->q];
    uint64_t b = dbl_bits(d);
    /* (float)d is the correctly rounded float of the literal unless d is exactly a float
     * midpoint (low 29 bits 1000...0) or lies in the float subnormal range. */
    if (ISV_LIKELY((b & 0x1FFFFFFFu) != 0x10000000u && (b >> 52) >= 1023 - 126)) {
      float f = (float)d;
      return n->neg ? -f : f;
    }
  }
  return bits_flt(s | (uint32_t)dec2bin(n, 24, 8));
}

ISV_INLINE uint16_t lit_to_f16(const numlit *n) {
  uint16_t s = (uint16_t)(n->neg << 15);
  if (n->special) return (uint16_t)(s | (n->special == NUM_NAN ? 0x7E00u : 0x7C00u));
  if (n->w == 0) return s;
  return (uint16_t)(s | dec2bin(n, 11, 5));
}

ISV_INLINE uint16_t lit_to_bf16(const numlit *n) {
  uint16_t s = (uint16_t)(n->neg << 15);
  if (n->special) return (uint16_t)(s | (n->special == NUM_NAN ? 0x7FC0u : 0x7F80u));
  if (n->w == 0) return s;
  return (uint16_t)(s | dec2bin(n, 8, 8));
}

/* Integer literal: magnitude and sign; 0 ok, -1 not an integer (fraction/exponent/NaN/Inf),
 * -2 overflow of uint64. */
ISV_INLINE int lit_to_mag(const numlit *n, uint64_t *mag) {
  if (!n->is_int) return -1;
  /* Re-read the digits exactly (w holds at most 19 of them). */
  const char *p = n->start + n->neg;
  uint64_t v = 0;
  for (; p < n->end; p++) {
    unsigned d = (unsigned char)*p - '0';
    if (v > (UINT64_MAX - d) / 10) return -2;
    v = v * 10 + d;
  }
  *mag = v;
  return 0;
}

/* Parse a whole token's text as a number literal. */
static int token_lit(const isv__json_token *t, numlit *n) {
  if (!t || t->type != ISV__JSON_NUMBER || t->len == 0) return -1;
  int err = 0;
  const char *errp = NULL;
  const char *e = scan_num(t->ptr, t->ptr + t->len, n, &err, &errp);
  return (e && e == t->ptr + t->len) ? 0 : -1;
}

int isv__json_to_double(const isv__json_token *t, double *out) {
  numlit n;
  if (token_lit(t, &n)) return -1;
  *out = lit_to_f64(&n);
  return 0;
}

int isv__json_to_float(const isv__json_token *t, float *out) {
  numlit n;
  if (token_lit(t, &n)) return -1;
  *out = lit_to_f32(&n);
  return 0;
}

int isv__json_to_int64(const isv__json_token *t, int64_t *out) {
  numlit n;
  uint64_t m;
  if (token_lit(t, &n) || lit_to_mag(&n, &m)) return -1;
  if (n.neg) {
    if (m > (UINT64_C(1) << 63)) return -1;
    *out = (int64_t)(0 - m);
  } else {
    if (m > (uint64_t)INT64_MAX) return -1;
    *out = (int64_t)m;
  }
  return 0;
}

int isv__json_to_uint64(const isv__json_token *t, uint64_t *out) {
  numlit n;
  uint64_t m;
  if (token_lit(t, &n) || lit_to_mag(&n, &m)) return -1;
  if (n.neg && m != 0) return -1;
  *out = m;
  return 0;
}

int isv__json_to_f16(const isv__json_token *t, uint16_t *out) {
  numlit n;
  if (token_lit(t, &n)) return -1;
  *out = lit_to_f16(&n);
  return 0;
}

int isv__json_to_bf16(const isv__json_token *t, uint16_t *out) {
  numlit n;
  if (token_lit(t, &n)) return -1;
  *out = lit_to_bf16(&n);
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The pull reader
 * ------------------------------------------------------------------------------------------- */
enum {
  ST_VALUE = 0,        /* a value (top level, or after ':') */
  ST_VALUE_AFTER_COMMA, /* a value after ',' in an array (']' would be a trailing comma) */
  ST_ARRAY_FIRST,      /* after '[': a value or ']' */
  ST_OBJECT_FIRST,     /* after '{': a key or '}' */
  ST_OBJECT_KEY,       /* after ',' in an object: a key */
  ST_AFTER_VALUE,      /* after a value in a container: ',' or the closing bracket */
  ST_DONE              /* the top-level value has ended */
};

void isv__json_reader_init(isv__json_reader *r, char *buf, size_t len, unsigned max_depth) {
  r->buf = buf;
  r->len = len;
  r->pos = 0;
  r->depth = 0;
  if (max_depth < 1) max_depth = 1;
  if (max_depth > ISV__JSON_MAX_DEPTH_LIMIT) max_depth = ISV__JSON_MAX_DEPTH_LIMIT;
  r->max_depth = max_depth;
  r->state = ST_VALUE;
  r->failed = 0;
  r->err_offset = 0;
  r->err[0] = '\0';
}

ISV_INLINE int top_is_object(const isv__json_reader *r) {
  unsigned d = r->depth - 1;
  return (r->stack[d >> 3] >> (d & 7)) & 1;
}

static int push(isv__json_reader *r, int is_object, size_t off) {
  if (r->depth >= r->max_depth)
    return fail(r, off, "nesting deeper than %u at offset %zu", r->max_depth, off);
  unsigned d = r->depth++;
  if (is_object)
    r->stack[d >> 3] |= (uint8_t)(1u << (d & 7));
  else
    r->stack[d >> 3] &= (uint8_t)~(1u << (d & 7));
  return 0;
}

ISV_INLINE void after_value(isv__json_reader *r) {
  r->state = r->depth == 0 ? ST_DONE : ST_AFTER_VALUE;
}

static int number_error(isv__json_reader *r, int err, const char *errp, const char *prefix) {
  size_t off = (size_t)(errp - r->buf);
  switch (err) {
    case NERR_LEADING0:
      return fail(r, off, "%sleading zero in number at offset %zu", prefix, off);
    case NERR_FRAC:
      return fail(r, off, "%sexpected a digit after '.' in number at offset %zu", prefix, off);
    case NERR_EXP:
      return fail(r, off, "%sexpected a digit in the exponent of number at offset %zu", prefix, off);
    default:
      return fail(r, off, "%sinvalid number or literal at offset %zu", prefix, off);
  }
}

static isv__json_type next_impl(isv__json_reader *r, isv__json_token *tok, int unescape) {
  isv__json_token dummy;
  if (!tok) tok = &dummy;
  tok->type = ISV__JSON_ERROR;
  tok->ptr = NULL;
  tok->len = 0;
  if (r->failed) {
    tok->offset = r->err_offset;
    return ISV__JSON_ERROR;
  }
  const char *buf = r->buf;
  const char *end = buf + r->len;
  const char *p = buf + r->pos;
  int is_obj;
again:
  p = skip_ws(p, end);
  tok->offset = (size_t)(p - buf);
  if (p >= end) {
    if (r->state == ST_DONE) {
      r->pos = r->len;
      tok->type = ISV__JSON_EOF;
      tok->ptr = end;
      return ISV__JSON_EOF;
    }
    fail(r, r->len, "unexpected end of input at offset %zu", r->len);
    return ISV__JSON_ERROR;
  }
  switch (r->state) {
    case ST_DONE:
      fail_unexpected(r, tok->offset, NULL);
      snprintf(r->err + strlen(r->err), sizeof r->err - strlen(r->err), " after the top-level value");
      return ISV__JSON_ERROR;
    case ST_AFTER_VALUE:
      is_obj = top_is_object(r);
      if (*p == ',') {
        p++;
        r->state = is_obj ? ST_OBJECT_KEY : ST_VALUE_AFTER_COMMA;
        goto again;
      }
      if (*p == (is_obj ? '}' : ']')) goto close;
      fail_unexpected(r, tok->offset, is_obj ? "',' or '}'" : "',' or ']'");
      return ISV__JSON_ERROR;
    case ST_OBJECT_FIRST:
    case ST_OBJECT_KEY: {
      if (*p == '}') {
        if (r->state == ST_OBJECT_FIRST) goto close;
        fail(r, tok->offset, "trailing comma before '}' at offset %zu", tok->offset);
        return ISV__JSON_ERROR;
      }
      if (*p != '"') {
        fail_unexpected(r, tok->offset, "an object key (a string)");
        return ISV__JSON_ERROR;
      }
      size_t e;
      if (scan_string(r, tok->offset, unescape, &tok->ptr, &tok->len, &e)) return ISV__JSON_ERROR;
      p = skip_ws(buf + e, end);
      if (p >= end || *p != ':') {
        fail_unexpected(r, (size_t)(p - buf), "':' after an object key");
        return ISV__JSON_ERROR;
      }
      r->pos = (size_t)(p + 1 - buf);
      r->state = ST_VALUE;
      tok->type = ISV__JSON_KEY;
      return ISV__JSON_KEY;
    }
    case ST_ARRAY_FIRST:
      if (*p == ']') goto close;
      break;
    case ST_VALUE_AFTER_COMMA:
      if (*p == ']') {
        fail(r, tok->offset, "trailing comma before ']' at offset %zu", tok->offset);
        return ISV__JSON_ERROR;
      }
      break;
    default:
      break;
  }
  /* A value. */
  switch (*p) {
    case '{':
    case '[':
      if (push(r, *p == '{', tok->offset)) return ISV__JSON_ERROR;
      r->state = *p == '{' ? ST_OBJECT_FIRST : ST_ARRAY_FIRST;
      tok->type = *p == '{' ? ISV__JSON_OBJECT_BEGIN : ISV__JSON_ARRAY_BEGIN;
      tok->ptr = p;
      tok->len = 1;
      r->pos = tok->offset + 1;
      return tok->type;
    case '"': {
      size_t e;
      if (scan_string(r, tok->offset, unescape, &tok->ptr, &tok->len, &e)) return ISV__JSON_ERROR;
      r->pos = e;
      tok->type = ISV__JSON_STRING;
      after_value(r);
      return ISV__JSON_STRING;
    }
    case 't':
    case 'f':
    case 'n': {
      static const char *const lits[3] = {"true", "false", "null"};
      static const isv__json_type types[3] = {ISV__JSON_TRUE, ISV__JSON_FALSE, ISV__JSON_NULL};
      int k = *p == 't' ? 0 : *p == 'f' ? 1 : 2;
      size_t l = strlen(lits[k]);
      if ((size_t)(end - p) < l || memcmp(p, lits[k], l) != 0) {
        fail(r, tok->offset, "invalid literal at offset %zu", tok->offset);
        return ISV__JSON_ERROR;
      }
      tok->type = types[k];
      tok->ptr = p;
      tok->len = l;
      r->pos = tok->offset + l;
      after_value(r);
      return tok->type;
    }
    default: {
      unsigned char c = (unsigned char)*p;
      if (!(is_digit(c) || c == '-' || c == 'N' || c == 'I')) {
        fail_unexpected(r, tok->offset, "a value");
        return ISV__JSON_ERROR;
      }
      numlit nl;
      int err = 0;
      const char *errp = NULL;
      const char *e = scan_num(p, end, &nl, &err, &errp);
      if (!e) {
        number_error(r, err, errp, "");
        return ISV__JSON_ERROR;
      }
      tok->type = ISV__JSON_NUMBER;
      tok->ptr = p;
      tok->len = (size_t)(e - p);
      r->pos = (size_t)(e - buf);
      after_value(r);
      return ISV__JSON_NUMBER;
    }
  }
close:
  r->depth--;
  tok->type = *p == '}' ? ISV__JSON_OBJECT_END : ISV__JSON_ARRAY_END;
  tok->ptr = p;
  tok->len = 1;
  r->pos = tok->offset + 1;
  after_value(r);
  return tok->type;
}

isv__json_type isv__json_next(isv__json_reader *r, isv__json_token *tok) {
  return next_impl(r, tok, 1);
}

int isv__json_skip(isv__json_reader *r, const isv__json_token *first, size_t *end) {
  if (r->failed) return -1;
  if (!first) return fail(r, r->pos, "nothing to skip at offset %zu", r->pos);
  switch (first->type) {
    case ISV__JSON_OBJECT_BEGIN:
    case ISV__JSON_ARRAY_BEGIN: {
      unsigned target = r->depth - 1;
      isv__json_token t;
      for (;;) {
        isv__json_type ty = next_impl(r, &t, 0); /* validate, but leave the bytes untouched */
        if (ty == ISV__JSON_ERROR) return -1;
        if ((ty == ISV__JSON_OBJECT_END || ty == ISV__JSON_ARRAY_END) && r->depth == target) break;
      }
      if (end) *end = r->pos;
      return 0;
    }
    case ISV__JSON_STRING:
    case ISV__JSON_NUMBER:
    case ISV__JSON_TRUE:
    case ISV__JSON_FALSE:
    case ISV__JSON_NULL:
      if (end) *end = r->pos;
      return 0;
    default:
      return fail(r, first->offset, "no value to skip at offset %zu", first->offset);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Tensors
 * ------------------------------------------------------------------------------------------- */
static const char *dt_name(isv_datatype dt) {
  const char *n = isv__dt_name(dt, ISV__DTN_V2);
  return n ? n : "INVALID";
}

static const char *what_is(const char *p, const char *end) {
  size_t n = (size_t)(end - p);
  switch (*p) {
    case '"': return "a string";
    case 't': return n >= 4 && memcmp(p, "true", 4) == 0 ? "a boolean" : NULL;
    case 'f': return n >= 5 && memcmp(p, "false", 5) == 0 ? "a boolean" : NULL;
    case 'n': return n >= 4 && memcmp(p, "null", 4) == 0 ? "null" : NULL;
    case '{': return "an object";
    case '[': return "an array";
    case ',': return "','";
    default: return (is_digit((unsigned char)*p) || *p == '-' || *p == 'N' || *p == 'I') ? "a number" : NULL;
  }
}

ISV_NOINLINE int elem_type_error(isv__json_reader *r, const char *p, size_t idx, isv_datatype dt) {
  size_t off = (size_t)(p - r->buf);
  const char *w = what_is(p, r->buf + r->len);
  const char *want = dt == ISV_BOOL ? "true or false" : dt == ISV_BYTES ? "a string" : "a number";
  if (w)
    return fail(r, off, "element %zu: expected %s for %s, got %s at offset %zu", idx, want,
                dt_name(dt), w, off);
  char tmp[16];
  return fail(r, off, "element %zu: expected %s for %s, got %s at offset %zu", idx, want,
              dt_name(dt), describe(r, off, tmp), off);
}

/* An element literal, quoted for a message (at most 40 bytes). */
#define LIT_FMT "%.*s%s"
#define LIT_ARGS(s, e) (int)((e) - (s) > 40 ? 40 : (e) - (s)), (s), ((e) - (s) > 40 ? "..." : "")

ISV_NOINLINE int elem_int_error(isv__json_reader *r, const char *p, const char *end, size_t idx,
                                isv_datatype dt, int overflow) {
  numlit nl;
  int err = 0;
  const char *errp = NULL;
  char prefix[48];
  snprintf(prefix, sizeof prefix, "element %zu: ", idx);
  const char *e = scan_num(p, end, &nl, &err, &errp);
  if (!e) return number_error(r, err, errp, prefix);
  size_t off = (size_t)(p - r->buf);
  if (!nl.is_int && !overflow)
    return fail(r, off, "element %zu: " LIT_FMT " is not an integer (%s takes no fraction or exponent) at offset %zu",
                idx, LIT_ARGS(p, e), dt_name(dt), off);
  return fail(r, off, "element %zu: " LIT_FMT " is out of range for %s at offset %zu", idx,
              LIT_ARGS(p, e), dt_name(dt), off);
}

/* base64 body of a {"b64": "..."} BYTES element; p is just after '{'. Returns the end. */
static const char *parse_b64_obj(isv__json_reader *r, const char *p, size_t idx, isv_bytes *out) {
  const char *buf = r->buf, *end = buf + r->len;
  const char *k;
  size_t kl, e;
  p = skip_ws(p, end);
  if (p >= end || *p != '"') goto bad;
  if (scan_string(r, (size_t)(p - buf), 1, &k, &kl, &e)) return NULL;
  if (kl != 3 || memcmp(k, "b64", 3) != 0) goto bad;
  p = skip_ws(buf + e, end);
  if (p >= end || *p != ':') goto bad;
  p = skip_ws(p + 1, end);
  if (p >= end || *p != '"') goto bad;
  const char *v;
  size_t vl;
  size_t voff = (size_t)(p - buf);
  if (scan_string(r, voff, 1, &v, &vl, &e)) return NULL;
  size_t dl = isv__base64_decode(v, vl, (unsigned char *)(uintptr_t)v);
  if (dl == (size_t)-1) {
    fail(r, voff, "element %zu: invalid base64 at offset %zu", idx, voff);
    return NULL;
  }
  p = skip_ws(buf + e, end);
  if (p >= end || *p != '}') goto bad;
  out->ptr = v;
  out->len = dl;
  return p + 1;
bad:
  fail(r, (size_t)(p - buf), "element %zu: a BYTES object must be {\"b64\": \"<base64>\"} at offset %zu",
       idx, (size_t)(p - buf));
  return NULL;
}

/* Parse one element at p (p < end) into out[idx]. Returns the end or NULL. With a constant
 * dt (every caller below), the switch folds away. */
ISV_INLINE const char *parse_elem(isv__json_reader *r, const char *p, const char *end,
                                  const isv_datatype dt, void *out, size_t idx) {
  switch (dt) {
    case ISV_FP32:
    case ISV_FP64:
    case ISV_FP16:
    case ISV_BF16: {
      unsigned char c = (unsigned char)*p;
      if (ISV_UNLIKELY(!(is_digit(c) || c == '-' || c == 'N' || c == 'I'))) {
        elem_type_error(r, p, idx, dt);
        return NULL;
      }
      numlit nl;
      int err = 0;
      const char *errp = NULL;
      const char *e = scan_num(p, end, &nl, &err, &errp);
      if (ISV_UNLIKELY(!e)) {
        char prefix[48];
        snprintf(prefix, sizeof prefix, "element %zu: ", idx);
        number_error(r, err, errp, prefix);
        return NULL;
      }
      if (dt == ISV_FP32)
        ((float *)out)[idx] = lit_to_f32(&nl);
      else if (dt == ISV_FP64)
        ((double *)out)[idx] = lit_to_f64(&nl);
      else if (dt == ISV_FP16)
        ((uint16_t *)out)[idx] = lit_to_f16(&nl);
      else
        ((uint16_t *)out)[idx] = lit_to_bf16(&nl);
      return e;
    }
    case ISV_UINT8:
    case ISV_UINT16:
    case ISV_UINT32:
    case ISV_UINT64:
    case ISV_INT8:
    case ISV_INT16:
    case ISV_INT32:
    case ISV_INT64: {
      const char *s = p;
      int neg = 0;
      if (*s == '-') {
        neg = 1;
        s++;
      }
      if (ISV_UNLIKELY(s >= end || !is_digit((unsigned char)*s))) {
        if (s < end && (*s == 'I' || (*s == 'N' && !neg))) return elem_int_error(r, p, end, idx, dt, 0), NULL;
        if (neg) return elem_int_error(r, p, end, idx, dt, 0), NULL;
        elem_type_error(r, p, idx, dt);
        return NULL;
      }
      uint64_t v = (unsigned char)*s++ - '0';
      int overflow = 0;
      if (v == 0) {
        if (s < end && is_digit((unsigned char)*s)) return elem_int_error(r, p, end, idx, dt, 0), NULL;
      } else {
        int ndig = 1;
        while (end - s >= 8 && ndig <= 11) {
          uint64_t x;
          int k = swar_digits(s, &x);
          v = v * p10u[k] + x;
          ndig += k;
          s += k;
          if (k < 8) break;
        }
        while (s < end && is_digit((unsigned char)*s)) {
          unsigned d = (unsigned char)*s - '0';
          if (ISV_UNLIKELY(v > (UINT64_MAX - d) / 10)) overflow = 1;
          v = v * 10 + d;
          s++;
        }
      }
      if (ISV_UNLIKELY(s < end && (*s == '.' || (*s | 0x20) == 'e')))
        return elem_int_error(r, p, end, idx, dt, 0), NULL;
      if (ISV_UNLIKELY(overflow)) return elem_int_error(r, p, end, idx, dt, 1), NULL;
      int ok;
      switch (dt) {
        case ISV_UINT8: ok = !neg ? v <= UINT8_MAX : v == 0; if (ok) ((uint8_t *)out)[idx] = (uint8_t)v; break;
        case ISV_UINT16: ok = !neg ? v <= UINT16_MAX : v == 0; if (ok) ((uint16_t *)out)[idx] = (uint16_t)v; break;
        case ISV_UINT32: ok = !neg ? v <= UINT32_MAX : v == 0; if (ok) ((uint32_t *)out)[idx] = (uint32_t)v; break;
        case ISV_UINT64: ok = !neg || v == 0; if (ok) ((uint64_t *)out)[idx] = v; break;
        case ISV_INT8: ok = v <= (uint64_t)INT8_MAX + neg; if (ok) ((int8_t *)out)[idx] = (int8_t)(neg ? -(int64_t)v : (int64_t)v); break;
        case ISV_INT16: ok = v <= (uint64_t)INT16_MAX + neg; if (ok) ((int16_t *)out)[idx] = (int16_t)(neg ? -(int64_t)v : (int64_t)v); break;
        case ISV_INT32: ok = v <= (uint64_t)INT32_MAX + neg; if (ok) ((int32_t *)out)[idx] = (int32_t)(neg ? -(int64_t)v : (int64_t)v); break;
        default: /* INT64 */
          ok = v <= (uint64_t)INT64_MAX + (uint64_t)neg;
          if (ok) ((int64_t *)out)[idx] = neg ? (int64_t)(0 - v) : (int64_t)v;
          break;
      }
      if (ISV_UNLIKELY(!ok)) return elem_int_error(r, p, end, idx, dt, 1), NULL;
      return s;
    }
    case ISV_BOOL:
      if (*p == 't' && end - p >= 4 && memcmp(p, "true", 4) == 0) {
        ((uint8_t *)out)[idx] = 1;
        return p + 4;
      }
      if (*p == 'f' && end - p >= 5 && memcmp(p, "false", 5) == 0) {
        ((uint8_t *)out)[idx] = 0;
        return p + 5;
      }
      elem_type_error(r, p, idx, dt);
      return NULL;
    case ISV_BYTES: {
      isv_bytes *b = (isv_bytes *)out + idx;
      if (*p == '"') {
        size_t e;
        if (scan_string(r, (size_t)(p - r->buf), 1, &b->ptr, &b->len, &e)) return NULL;
        return r->buf + e;
      }
      if (*p == '{') return parse_b64_obj(r, p + 1, idx, b);
      elem_type_error(r, p, idx, dt);
      return NULL;
    }
    default:
      fail(r, (size_t)(p - r->buf), "invalid datatype %d at offset %zu", (int)dt, (size_t)(p - r->buf));
      return NULL;
  }
}

ISV_NOINLINE int count_error(isv__json_reader *r, size_t off, size_t count, size_t got, int more) {
  if (more)
    return fail(r, off, "expected %zu elements, got more than %zu at offset %zu", count, count, off);
  return fail(r, off, "expected %zu elements, got %zu at offset %zu", count, got, off);
}

ISV_NOINLINE int eof_error(isv__json_reader *r) {
  return fail(r, r->len, "unexpected end of input at offset %zu", r->len);
}

/* The array loop; the opening '[' has been consumed (and counted in r->depth). */
ISV_INLINE int tensor_array(isv__json_reader *r, const isv_datatype dt, void *out, size_t count,
                            size_t first_off) {
  const char *const buf = r->buf;
  const char *const end = buf + r->len;
  const char *p = buf + r->pos;
  unsigned nest = 1;
  size_t n = 0;
first_in_array:
  p = skip_ws(p, end);
  if (ISV_UNLIKELY(p >= end)) return eof_error(r);
  if (*p == ']') goto close;
value:
  if (ISV_UNLIKELY(*p == '[')) {
    if (r->depth + nest > r->max_depth) {
      size_t off = (size_t)(p - buf);
      return fail(r, off, "nesting deeper than %u at offset %zu", r->max_depth, off);
    }
    nest++;
    p++;
    goto first_in_array;
  }
  if (ISV_UNLIKELY(n == count)) return count_error(r, (size_t)(p - buf), count, n, 1);
  p = parse_elem(r, p, end, dt, out, n);
  if (ISV_UNLIKELY(!p)) return -1;
  n++;
  /* after a value */
  if (ISV_LIKELY(p < end && *p == ',')) {
    p++;
    goto after_comma;
  }
after_value:
  p = skip_ws(p, end);
  if (ISV_UNLIKELY(p >= end)) return eof_error(r);
  if (*p == ',') {
    p++;
    goto after_comma;
  }
  if (*p == ']') goto close;
  return fail_unexpected(r, (size_t)(p - buf), "',' or ']'");
after_comma:
  if (ISV_LIKELY(p < end && !is_ws((unsigned char)*p) && *p != ']')) goto value;
  p = skip_ws(p, end);
  if (ISV_UNLIKELY(p >= end)) return eof_error(r);
  if (*p == ']') {
    size_t off = (size_t)(p - buf);
    return fail(r, off, "trailing comma before ']' at offset %zu", off);
  }
  goto value;
close:
  p++;
  if (--nest) goto after_value;
  if (ISV_UNLIKELY(n != count)) return count_error(r, first_off, count, n, 0);
  r->pos = (size_t)(p - buf);
  r->depth--;
  after_value(r);
  return 0;
}

int isv__json_read_tensor(isv__json_reader *r, const isv__json_token *first, isv_datatype dt,
                          void *out, size_t count) {
  if (r->failed) return -1;
  if (!first) return fail(r, r->pos, "no tensor value at offset %zu", r->pos);
  const size_t off = first->offset;
  switch (first->type) {
    case ISV__JSON_ARRAY_BEGIN:
      switch (dt) {
#define CASE(T) \
  case T: return tensor_array(r, T, out, count, off);
        CASE(ISV_BOOL) CASE(ISV_UINT8) CASE(ISV_UINT16) CASE(ISV_UINT32) CASE(ISV_UINT64)
        CASE(ISV_INT8) CASE(ISV_INT16) CASE(ISV_INT32) CASE(ISV_INT64) CASE(ISV_FP16)
        CASE(ISV_BF16) CASE(ISV_FP32) CASE(ISV_FP64) CASE(ISV_BYTES)
#undef CASE
        default:
          return fail(r, off, "invalid datatype %d at offset %zu", (int)dt, off);
      }
    case ISV__JSON_NUMBER:
    case ISV__JSON_TRUE:
    case ISV__JSON_FALSE:
    case ISV__JSON_NULL:
    case ISV__JSON_STRING:
    case ISV__JSON_OBJECT_BEGIN:
      break;
    default:
      return fail(r, off, "expected a tensor value (an array or a scalar) at offset %zu", off);
  }
  /* A scalar is one element. */
  if (count != 1) return count_error(r, off, count, 1, 0);
  if (dt == ISV_BYTES) {
    isv_bytes *b = out;
    if (first->type == ISV__JSON_STRING) {
      b->ptr = first->ptr;
      b->len = first->len;
      return 0;
    }
    if (first->type == ISV__JSON_OBJECT_BEGIN) {
      const char *e = parse_b64_obj(r, r->buf + r->pos, 0, b);
      if (!e) return -1;
      r->pos = (size_t)(e - r->buf);
      r->depth--;
      after_value(r);
      return 0;
    }
    return elem_type_error(r, r->buf + off, 0, dt);
  }
  if (first->type == ISV__JSON_STRING || first->type == ISV__JSON_OBJECT_BEGIN ||
      first->type == ISV__JSON_NULL)
    return elem_type_error(r, r->buf + off, 0, dt);
  const char *s = first->ptr, *e = first->ptr + first->len, *got = NULL;
  switch (dt) {
#define CASE(T) \
  case T: got = parse_elem(r, s, e, T, out, 0); break;
    CASE(ISV_BOOL) CASE(ISV_UINT8) CASE(ISV_UINT16) CASE(ISV_UINT32) CASE(ISV_UINT64)
    CASE(ISV_INT8) CASE(ISV_INT16) CASE(ISV_INT32) CASE(ISV_INT64) CASE(ISV_FP16)
    CASE(ISV_BF16) CASE(ISV_FP32) CASE(ISV_FP64)
#undef CASE
    default:
      return fail(r, off, "invalid datatype %d at offset %zu", (int)dt, off);
  }
  return got ? 0 : -1;
}
