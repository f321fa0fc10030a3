/* Solves one rank-one tensor through the installed library: lambda must be 2. */
#include <math.h>
#include <stdio.h>

#include <tk_sshopm.h>

int main(void)
{
    double packed[15] = {0};
    packed[14] = 2.0; /* 2 e_3^4 */
    tk_sshopm_options o;
    tk_sshopm_options_init(&o, 4, 3);
    o.precision = TK_PRECISION_DOUBLE;
    o.tol = 1e-12;
    o.shift_mode = TK_SHIFT_ADAPTIVE;
    o.num_starts = 16;
    double lambda[16], x[48];
    int32_t iterations[16];
    uint8_t converged[16];
    tk_sshopm_starts_result r = {lambda, x, iterations, converged};
    if (tk_sshopm_solve(&o, 1, packed, &r, NULL) != TK_OK) {
        fprintf(stderr, "tk_consumer: %s\n", tk_last_error());
        return 1;
    }
    double best = -1;
    for (int s = 0; s < 16; ++s) best = converged[s] && lambda[s] > best ? lambda[s] : best;
    printf("largest eigenvalue %.12f\n", best);
    return fabs(best - 2.0) < 1e-9 ? 0 : 1;
}
