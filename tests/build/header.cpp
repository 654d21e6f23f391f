// SPDX-License-Identifier: MIT
// The public header compiles as C++, with C linkage for its calls.
#include <ion/ion.h>

int header_cxx_uses();
int header_cxx_uses()
{
	ion_ctx *ctx = nullptr;
	ion_user_handle_t handle = 0;

	return ion_ctx_new(nullptr, &ctx) + ion_free(-1, handle) +
	       static_cast<int>(ION_FLAG_CACHED);
}
