/*
 * SANITIZED: 1 in a build under AddressSanitizer or ThreadSanitizer (which intercept
 * malloc and slow everything down), else 0. For the test programs.
 */
#ifndef CONVOY_TESTS_SANITIZED_H
#define CONVOY_TESTS_SANITIZED_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#endif /* CONVOY_TESTS_SANITIZED_H */
