// Shared-memory race between warps (racecheck).
// swap_halves stages 64 values (two warps) in shared memory, then each thread reads the
// value that the other warp wrote; the __syncthreads between the write and the read
// orders the two warps. controls/race.patch removes it: racecheck reports the hazard
// between the tile write and the cross-warp read, aggregated per pair of instructions
// ("Race reported between Write access ... and Read access ... [N hazards]"; a
// Read-then-Write record too if one warp reads before the other writes), so one or two
// records; the exact split per --racecheck-report mode is measured on the GPU (docs/).
// Without the checker the result is usually still right: races are timing-dependent.
#include "common.h"

constexpr int THREADS = 64;  // two warps
constexpr int HALF = THREADS / 2;

__global__ void swap_halves(const int *in, int *out) {
    __shared__ int tile[THREADS];
    int t = threadIdx.x;
    tile[t] = in[t];
    __syncthreads();
    out[t] = tile[(t + HALF) % THREADS];
}

int main() {
    int in[THREADS];
    for (int i = 0; i < THREADS; ++i)
        in[i] = 100 + i;
    int *d_in = nullptr, *d_out = nullptr;
    CHECK(cudaMalloc(&d_in, sizeof in));
    CHECK(cudaMalloc(&d_out, sizeof in));
    CHECK(cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice));
    LAUNCH(swap_halves, 1, THREADS, d_in, d_out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int out[THREADS];
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    for (int i = 0; i < THREADS; ++i) {
        int expected = in[(i + HALF) % THREADS];
        if (out[i] != expected) {
            fprintf(stderr, "race: out[%d] = %d, expected %d\n", i, out[i], expected);
            return 1;
        }
    }
    puts("race: ok");
    return 0;
}
