// cxx_header.cpp - <ccomm/ccomm.h> as a C++ program sees it: it must compile
// warning-free under -Wall -Wextra -Werror -pedantic (C++11 and C++17), and
// its functions must link with C linkage (a header without extern "C" makes
// the calls below undefined references to mangled names).
#include <ccomm/ccomm.h>

#include <cstdio>
#include <cstring>

int main()
{
    cc_dtype_t dt = CC_FLOAT64;
    if (cc_dtype_parse("f32", &dt) != CC_OK || cc_dtype_size(dt) != 4) {
        std::printf("FAIL: cc_dtype_parse(\"f32\") gave %d\n", static_cast<int>(dt));
        return 1;
    }
    const char *name = cc_status_name(CC_ERR_TIMEOUT);
    if (!name || std::strcmp(name, "ERR_TIMEOUT") != 0) {
        std::printf("FAIL: cc_status_name(CC_ERR_TIMEOUT) = %s\n", name ? name : "(null)");
        return 1;
    }
    if (std::strcmp(cc_version_string(), CC_VERSION_STRING) != 0) {
        std::printf("FAIL: cc_version_string() = %s, header says %s\n", cc_version_string(),
                    CC_VERSION_STRING);
        return 1;
    }
    std::printf("ok: %s, %s, %d variables, version %s\n", cc_dtype_name(dt), name, cc_env_count(),
                cc_version_string());
    return 0;
}
