/* Wall-clock milliseconds (CLOCK_MONOTONIC), the one timer of every core's tk_timing. */
#ifndef TK_TIMER_H
#define TK_TIMER_H
#ifdef __cplusplus
extern "C" {
#endif
double tk_now_ms(void);
#ifdef __cplusplus
}
#endif
#endif
