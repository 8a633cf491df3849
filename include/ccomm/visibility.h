/* ccomm/visibility.h - the export macro. Only CC_API symbols leave libccomm. */
#ifndef CCOMM_VISIBILITY_H
#define CCOMM_VISIBILITY_H

#if defined(__GNUC__) || defined(__clang__)
#define CC_API __attribute__((visibility("default")))
#else
#define CC_API
#endif

#endif /* CCOMM_VISIBILITY_H */
