// tk-tucker end to end: synth, train, predict, errors, and a SIGKILL during training.
#include <gtest/gtest.h>

#include <dirent.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tk_cli_runner.h"
#include "tk_tucker.h"

using namespace tk_test;

namespace {

const std::string exe = TK_TUCKER_EXE;

RunResult tucker(const std::string &args, const std::string &dir) { return run_tool(exe + " " + args, dir); }

std::vector<std::vector<double>> read_rows(const std::string &text)
{
    std::vector<std::vector<double>> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::vector<double> row;
        double v;
        while (ls >> v) row.push_back(v);
        if (!row.empty() && ls.eof()) rows.push_back(row);
    }
    return rows;
}

std::string manifest_value(const std::string &dir, const std::string &key)
{
    std::istringstream in(slurp(dir + "/manifest.txt"));
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + " = ", 0) == 0) return line.substr(key.size() + 3);
    return "";
}

// The sparse planted tensor of the spectral tests in d/name: 1500 x 300 x 50, 40,000 entries
// (2.7 a column of X(1), as Netflix has), where ALS from a random start learns nothing.
auto synth_sparse(const std::string &d, const std::string &name)
{
    return tucker("synth --shape 1500,300,50 --nnz 40000 --rank-j 4 --rank-r 4 --seed 1 --allow-duplicates " + d +
                      "/" + name,
                  d);
}

}  // namespace

TEST(TuckerCli, SynthTrainPredict)
{
    std::string d = make_temp_dir("tk_tucker_cli");
    auto r = tucker("synth --shape 120,80,60 --nnz 30000 --rank-j 4 --rank-r 4 --noise 0.1 --seed 2 --truth " + d +
                        "/truth " + d + "/s.tns",
                    d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The true model reproduces its entries up to the noise.
    r = tucker("predict " + d + "/truth " + d + "/s.tns " + d + "/p.tns", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto data = read_rows(slurp(d + "/s.tns")), pred = read_rows(slurp(d + "/p.tns"));
    ASSERT_EQ(data.size(), 30000u);
    ASSERT_EQ(pred.size(), data.size());
    double sse = 0;
    for (size_t e = 0; e < data.size(); ++e) {
        ASSERT_EQ(pred[e].size(), 4u);
        for (int k = 0; k < 3; ++k) ASSERT_EQ(pred[e][k], data[e][k]);
        sse += (pred[e][3] - data[e][3]) * (pred[e][3] - data[e][3]);
    }
    EXPECT_NEAR(std::sqrt(sse / (double)data.size()), 0.1, 0.01);

    r = tucker("train " + d + "/s.tns --test-fraction 0.1 --rank-j 4 --rank-r 4 --iters 12 --factor-update sgd "
               "--lr-a 0.1 --lr-b 5 "
                   "--lambda-a 1e-4 --lambda-b 1e-4 --seed 1 --quiet --out " + d + "/m",
               d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto rows = read_rows(r.out);
    ASSERT_EQ(rows.size(), 12u) << r.out;
    for (auto &row : rows) ASSERT_EQ(row.size(), 7u);
    EXPECT_LT(rows.back()[5], rows.front()[5]);  // test RMSE went down
    EXPECT_LT(rows.back()[5], 0.3);
    EXPECT_TRUE(exists(d + "/s.tns.tkc"));  // the binary cache
    EXPECT_EQ(manifest_value(d + "/m", "iteration"), "12");
    for (const char *f : {"A1.npy", "A3.npy", "B2.npy"}) EXPECT_TRUE(exists(d + "/m/" + f)) << f;

    // Queries without values; the output keeps their index columns.
    std::ofstream(d + "/q.tns") << "# queries\n1 1 1\n120 80 60 9.5\n";
    r = tucker("predict " + d + "/m " + d + "/q.tns " + d + "/qp.tns", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto q = read_rows(slurp(d + "/qp.tns"));
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q[1][0], 120);
    EXPECT_NE(q[1][3], 9.5);
}

// The warning when the trained model predicts held-out entries no better than their mean: none
// on a planted model it learns, and one (exit 0: a result, not an error) where the noise is ten
// times the signal, which a model of rank 4 fitted to 27,000 entries can only overfit.
TEST(TuckerCli, WarnsWhereTheModelDoesNotBeatTheMean)
{
    std::string d = make_temp_dir("tk_tucker_cli_baseline");
    for (const char *noise : {"0.1", "5"}) {
        const std::string tns = d + "/s" + noise + ".tns";
        auto r = tucker(std::string("synth --shape 120,80,60 --nnz 30000 --rank-j 4 --rank-r 4 --seed 2 --noise ") +
                            noise + " " + tns,
                        d);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        r = tucker("train " + tns + " --test-fraction 0.1 --rank-j 4 --rank-r 4 --iters 15 --threads 2 --init random --out " +
                       d + "/m" + noise,
                   d);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto rows = read_rows(r.out);
        ASSERT_EQ(rows.size(), 15u) << r.out;
        const bool warned = r.err.find("warning: the test RMSE after iteration 15") != std::string::npos;
        if (std::string(noise) == "0.1") {
            EXPECT_LT(rows.back()[5], 0.2) << r.out;
            EXPECT_FALSE(warned) << r.err;
        } else {
            EXPECT_TRUE(warned) << r.out << r.err;
            EXPECT_NE(r.err.find("predicting the training entries' mean"), std::string::npos) << r.err;
            EXPECT_NE(r.err.find("--rank-j"), std::string::npos) << r.err;
        }
        // --quiet keeps stderr for errors
        if (std::string(noise) == "5") {
            r = tucker("train " + tns + " --test-fraction 0.1 --rank-j 4 --rank-r 4 --iters 2 --quiet --force --out " +
                           d + "/q",
                       d);
            ASSERT_EQ(r.exit_code, 0) << r.err;
            EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
        }
    }
}

// --init spectral: a start (tk_tucker_spectral_start) that ALS trains from and the manifest
// records, kept by a resumed run; refused with --resume and for an unknown start.
TEST(TuckerCli, SpectralInit)
{
    std::string d = make_temp_dir("tk_tucker_spectral");
    auto r = synth_sparse(d, "s.tns");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string train = "train " + d + "/s.tns --test-fraction 0.05 --rank-j 4 --rank-r 4 --threads 1 --out " + d;
    r = tucker(train + "/m --iters 3 --init spectral", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("spectral start"), std::string::npos) << r.err;
    EXPECT_TRUE(exists(d + "/m/A1.npy"));
    EXPECT_EQ(manifest_value(d + "/m", "init"), "spectral");
    auto rows = read_rows(r.out);
    ASSERT_EQ(rows.size(), 3u) << r.out;
    EXPECT_LT(rows.back()[5], 0.25) << r.out; // test RMSE: the random start's is above 0.8 here
    r = tucker(train + "/m --iters 5 --resume", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(manifest_value(d + "/m", "iteration"), "5");
    EXPECT_EQ(manifest_value(d + "/m", "init"), "spectral");
    r = tucker(train + "/r --iters 1 --init random", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(manifest_value(d + "/r", "init"), "random");
    r = tucker(train + "/m --iters 7 --resume --init spectral", d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--init spectral"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
    EXPECT_EQ(manifest_value(d + "/m", "iteration"), "5");
    r = tucker(train + "/b --iters 1 --init bogus", d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--init"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(d + "/b"));
}

// --init spectral --deflate 1: --iters from the start, a deflation round, --iters more, one
// table of iterations 1 .. 2 x --iters; on this planted tensor ALS from the start stalls (test
// RMSE 0.21) and the round takes it to about the noise (0.12; the library's test of the same
// set-up: test_tucker_spectral.cpp).  The manifest records the rounds, a resumed run keeps them;
// refused with --init random, negative, and with --resume.
TEST(TuckerCli, SpectralDeflate)
{
    std::string d = make_temp_dir("tk_tucker_deflate");
    auto r = tucker("synth --shape 4000,300,50 --nnz 120000 --rank-j 4 --rank-r 4 --seed 3 --allow-duplicates " + d +
                        "/s.tns",
                    d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string train =
        "train " + d + "/s.tns --test-fraction 0.05 --rank-j 4 --rank-r 4 --threads 2 --seed 1 --out " + d;
    r = tucker(train + "/m --iters 15 --init spectral --deflate 1 --checkpoint-every 10", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("deflation round 1: kept"), std::string::npos) << r.err;
    auto rows = read_rows(r.out);
    ASSERT_EQ(rows.size(), 30u) << r.out;
    for (size_t k = 0; k < rows.size(); ++k) EXPECT_EQ(rows[k][0], (double)(k + 1)) << r.out;
    EXPECT_GT(rows[14][5], 0.18) << r.out; // stalled after the first 15
    EXPECT_LT(rows[29][5], 0.13) << r.out;
    EXPECT_LT(rows[29][4], rows[14][4]) << r.out; // train RMSE
    EXPECT_EQ(manifest_value(d + "/m", "deflate"), "1");
    EXPECT_EQ(manifest_value(d + "/m", "iters"), "30");
    EXPECT_EQ(manifest_value(d + "/m", "iteration"), "30");
    EXPECT_EQ(manifest_value(d + "/m", "init"), "spectral");
    // resumed with --iters 16: 16 x (1 + 1) in all, the round already run not run again
    r = tucker(train + "/m --iters 16 --resume", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("deflation round"), std::string::npos) << r.err;
    EXPECT_EQ(read_rows(r.out).size(), 2u) << r.out;
    EXPECT_EQ(manifest_value(d + "/m", "iteration"), "32");
    EXPECT_EQ(manifest_value(d + "/m", "deflate"), "1");
    r = tucker(train + "/r --iters 1 --init spectral", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(manifest_value(d + "/r", "deflate"), "0");
    // --deflate alone: the start it continues is the spectral one
    r = tucker(train + "/a --iters 2 --deflate 1", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(manifest_value(d + "/a", "init"), "spectral");
    EXPECT_EQ(manifest_value(d + "/a", "deflate"), "1");
    EXPECT_EQ(read_rows(r.out).size(), 4u) << r.out;
    for (const std::string bad : {"--init random --deflate 1", "--init spectral --deflate -1",
                                  "--init spectral --deflate 1 --resume"}) {
        r = tucker(train + "/b --iters 1 " + bad, d);
        EXPECT_EQ(r.exit_code, 2) << bad;
        EXPECT_NE(r.err.find("--deflate"), std::string::npos) << bad << ": " << r.err;
        EXPECT_FALSE(exists(d + "/b")) << bad;
    }
}

// --init auto, the default: on a tensor whose best unfolding has 2.5 entries a column (a random
// start ends above predicting 0 there: SpectralInit) the run is --init spectral --deflate 1's, the
// same model byte for byte, and says why on stderr; on one with 15 a column and 500 a row it is
// the random start's; with --factor-update sgd always the random start.
TEST(TuckerCli, TheDefaultStartFollowsTheSampling)
{
    std::string d = make_temp_dir("tk_tucker_auto");
    auto r = synth_sparse(d, "sparse.tns");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = tucker("synth --shape 60,50,40 --nnz 30000 --rank-j 4 --rank-r 4 --seed 1 " + d + "/dense.tns", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string opts = " --test-fraction 0.05 --rank-j 4 --rank-r 4 --threads 1 --iters 3 --out " + d;
    r = tucker("train " + d + "/sparse.tns" + opts + "/auto", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("start: spectral, then 1 deflation round"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--init auto"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("deflation round 1"), std::string::npos) << r.err;
    EXPECT_EQ(read_rows(r.out).size(), 6u) << r.out;
    EXPECT_EQ(manifest_value(d + "/auto", "init"), "spectral");
    EXPECT_EQ(manifest_value(d + "/auto", "deflate"), "1");
    r = tucker("train " + d + "/sparse.tns" + opts + "/explicit --init spectral --deflate 1", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("--init auto"), std::string::npos) << r.err;
    for (const char *f : {"A1.npy", "A2.npy", "A3.npy", "B1.npy", "B2.npy", "B3.npy"})
        EXPECT_EQ(slurp(d + "/auto/" + f), slurp(d + "/explicit/" + f)) << f;
    r = tucker("train " + d + "/sparse.tns" + opts + "/sgd --factor-update sgd", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(manifest_value(d + "/sgd", "init"), "random");
    EXPECT_EQ(read_rows(r.out).size(), 3u) << r.out;
    r = tucker("train " + d + "/dense.tns" + opts + "/dense", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("start: random (--init auto"), std::string::npos) << r.err;
    EXPECT_EQ(manifest_value(d + "/dense", "init"), "random");
    EXPECT_EQ(manifest_value(d + "/dense", "deflate"), "0");
    EXPECT_EQ(read_rows(r.out).size(), 3u) << r.out;
    r = tucker("train " + d + "/dense.tns" + opts + "/dense_random --init random", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char *f : {"A1.npy", "B1.npy"})
        EXPECT_EQ(slurp(d + "/dense/" + f), slurp(d + "/dense_random/" + f)) << f;
    // --quiet: no word of the choice
    r = tucker("train " + d + "/dense.tns" + opts + "/q --quiet", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("start:"), std::string::npos) << r.err;
}

TEST(TuckerCli, BadInputGivesClearErrors)
{
    std::string d = make_temp_dir("tk_tucker_bad");
    std::ofstream(d + "/bad.tns") << "1 1 1 1\n2 2 two 1\n";
    auto r = tucker("train " + d + "/bad.tns --out " + d + "/m", d);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("bad.tns:2:"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(d + "/m"));
    std::ofstream(d + "/z.tns") << "1 1 1 1\n0 2 2 1\n";
    r = tucker("train " + d + "/z.tns --out " + d + "/m", d);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("z.tns:2:"), std::string::npos) << r.err;
    std::ofstream(d + "/o2.tns") << "1 1 1\n2 2 1\n";
    r = tucker("train " + d + "/o2.tns --out " + d + "/m", d);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("order"), std::string::npos) << r.err;
    r = tucker("train " + d + "/z.tns --out " + d + "/m --rank-j 100", d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--rank-j"), std::string::npos) << r.err;
    r = tucker("train " + d + "/z.tns --out " + d + "/m --frobnicate", d);
    EXPECT_EQ(r.exit_code, 2);
    r = tucker("frobnicate", d);
    EXPECT_EQ(r.exit_code, 2);
    r = tucker("synth --shape 10,0,5 --nnz 10 " + d + "/x.tns", d);
    EXPECT_EQ(r.exit_code, 2);
    r = tucker("predict " + d + "/nomodel " + d + "/bad.tns " + d + "/o.tns", d);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("nomodel"), std::string::npos) << r.err;
    // A directory that is not ours is never replaced.
    std::string other = d + "/other";
    ASSERT_EQ(mkdir(other.c_str(), 0777), 0);
    std::ofstream(other + "/keep.txt") << "mine";
    r = tucker("synth --shape 10,10,10 --nnz 50 " + d + "/ok.tns", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = tucker("train " + d + "/ok.tns --iters 1 --rank-j 4 --rank-r 4 --out " + other, d);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("not a tk-tucker model directory"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(other + "/keep.txt"), "mine");
    // Queries beyond the model.
    r = tucker("train " + d + "/ok.tns --iters 1 --rank-j 4 --rank-r 4 --out " + d + "/m2", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ofstream(d + "/far.tns") << "1 1 1\n11 1 1\n";
    r = tucker("predict " + d + "/m2 " + d + "/far.tns " + d + "/o.tns", d);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("query 2"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(d + "/o.tns"));
    // --resume with other settings than the checkpoint's.
    r = tucker("train " + d + "/ok.tns --iters 2 --rank-j 4 --rank-r 4 --lambda-a 0.5 --resume --out " + d + "/m2", d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("lambda_a"), std::string::npos) << r.err;
    // ... or the other factor updates (the checkpoint's are the default row solves).
    r = tucker("train " + d + "/ok.tns --iters 2 --rank-j 4 --rank-r 4 --factor-update sgd --resume --out " + d + "/m2",
               d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("factor updates are sgd here but als"), std::string::npos) << r.err;
    // An ALS checkpoint of an older tk-tucker (a flat ridge: no als_ridge line) is not continued
    // under this one's ridge per entry.
    std::string manifest = slurp(d + "/m2/manifest.txt");
    const size_t ridge_line = manifest.find("als_ridge = per_entry\n");
    ASSERT_NE(ridge_line, std::string::npos) << manifest;
    std::ofstream(d + "/m2/manifest.txt") << manifest.erase(ridge_line, std::string("als_ridge = per_entry\n").size());
    r = tucker("train " + d + "/ok.tns --iters 2 --rank-j 4 --rank-r 4 --resume --out " + d + "/m2", d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("flat ridge"), std::string::npos) << r.err;
    // A factor rate with the row solves, which take none, is named, not ignored.
    r = tucker("train " + d + "/ok.tns --iters 1 --rank-j 4 --rank-r 4 --lr-a 0.5 --out " + d + "/m3", d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--lr-a: exact row solves"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(d + "/m3"));
    r = tucker("train " + d + "/ok.tns --iters 1 --rank-j 4 --rank-r 4 --als --factor-update sgd --out " + d + "/m3", d);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--als with --factor-update sgd"), std::string::npos) << r.err;
    // --als (the default, kept for older scripts) trains by row solves (its manifest says so) ...
    r = tucker("train " + d + "/ok.tns --iters 2 --rank-j 4 --rank-r 4 --als --quiet --out " + d + "/m4", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(manifest_value(d + "/m4", "factor_update"), "als");
    EXPECT_EQ(manifest_value(d + "/m4", "lambda_a"), "0.00029999999999999997");
    // ... and --factor-update sgd by the seed's steps and settings.
    r = tucker("train " + d + "/ok.tns --iters 2 --rank-j 4 --rank-r 4 --factor-update sgd --quiet --out " + d + "/m5",
               d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(manifest_value(d + "/m5", "factor_update"), "sgd");
    EXPECT_EQ(manifest_value(d + "/m5", "lr_b"), "1");
    EXPECT_EQ(manifest_value(d + "/m5", "lambda_a"), "0.001");
    EXPECT_EQ(manifest_value(d + "/m4", "lr_b"), "0");
}

// Kill -9 in the middle of training, resume, and get exactly the model of a run
// that was never interrupted (cpu, fixed seed), the deflation round that the kill came before
// included.
TEST(TuckerCli, SigkillThenResumeEqualsUninterrupted)
{
    std::string d = make_temp_dir("tk_tucker_kill");
    auto r = tucker("synth --shape 400,300,200 --nnz 150000 --rank-j 8 --rank-r 8 --seed 4 " + d + "/s.tns", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // the default start here (2.5 entries a column) is the spectral one with a deflation round
    // after iteration 10, which the resumed run must run as the whole one did
    const std::string common = "train " + d + "/s.tns --test-fraction 0.05 --rank-j 16 --rank-r 8 --iters 10 "
                               "--backend cpu --seed 7 --checkpoint-every 1 --quiet --out ";
    r = tucker(common + d + "/whole", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(manifest_value(d + "/whole", "deflate"), "1");

    std::string killed = d + "/killed";
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        std::string cmd = "exec " + exe + " " + common + killed + " > /dev/null 2>&1";
        execl("/bin/sh", "sh", "-c", cmd.c_str(), (char *)nullptr);
        _exit(127);
    }
    // until its third checkpoint, however long the start takes (minutes in a sanitizer build),
    // or until it ends by itself
    long seen = 0;
    int status = 0;
    bool ended = false;
    while (seen < 3 && !(ended = waitpid(pid, &status, WNOHANG) == pid)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::string it = exists(killed + "/manifest.txt") ? manifest_value(killed, "iteration") : "";
        if (!it.empty()) seen = std::stol(it);
    }
    if (!ended) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";
    const std::string at = manifest_value(killed, "iteration");
    ASSERT_FALSE(at.empty()) << "no checkpoint in " << killed;
    long at_kill = std::stol(at);
    EXPECT_GE(at_kill, 3);
    EXPECT_LT(at_kill, 10);

    r = tucker(common + killed + " --resume", d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("resuming"), std::string::npos) << r.err;
    EXPECT_EQ(read_rows(r.out).size(), (size_t)(20 - at_kill));
    EXPECT_EQ(manifest_value(killed, "iteration"), "20");
    for (const char *f : {"A1.npy", "A2.npy", "A3.npy", "B1.npy", "B2.npy", "B3.npy"})
        EXPECT_EQ(slurp(d + "/whole/" + f), slurp(killed + "/" + f)) << f;
    EXPECT_EQ(manifest_value(killed, "test_rmse"), manifest_value(d + "/whole", "test_rmse"));
    // The save the kill interrupted left no temporary folder (.tk-tmp-PID-*) behind after the resume.
    const std::string mine = ".tk-tmp-" + std::to_string(pid) + "-";
    if (DIR *dir = opendir(d.c_str())) {
        while (dirent *e = readdir(dir)) EXPECT_NE(std::string(e->d_name).rfind(mine, 0), 0u) << e->d_name;
        closedir(dir);
    }
}
