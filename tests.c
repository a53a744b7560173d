/* tests.c - ncf.h test suite: gradients against finite differences of an
   independent double-precision reference, Adam against hand-computed steps, the
   metrics against hand-ranked cases, the sampler against its properties, the
   loaders against files written here. Prints "N passed, N failed" last.

     ./tests                     run everything
     ./tests NAME...             the tests whose names contain one of the NAMEs
     ./tests --except NAME       all but the tests whose names contain NAME (repeatable)
     ./tests --list [NAME]       their names, one a line, without running them
     ./tests --print-hash        print the determinism hash (for the NO_OMP comparison)
     ./tests --expect-hash FILE  also check this build's hash equals the one in FILE
     ./tests --write-logs DIR    the example logs the demo's checks and docs read (plays.tsv, books.csv, ...)
     ./tests --write-seeds DIR   small model files of every kind, the model fuzzer's seeds

   The tests live in one file a stage of src/, named for it (tests/test_logs.c tests what
   src/logs.c does), and run as one program: this runner includes them in the order data flows,
   and its table lists every test in the order they are defined (make test checks it). What
   they share is tests/harness.h, with the benchmarks (tests/bench.c), the MPI suite
   (tests/mpi.c) and the fixture other builds check (tests/fixture.c). Each test's name is the
   claim it checks. */
#include "tests/harness.h"
#include "tests/fixture.h"

static const char *g_expect_hash_file;

#include "tests/test_base.c"
#include "tests/test_logs.c"
#include "tests/test_dataset.c"
#include "tests/test_sampler.c"
#include "tests/test_kernels.c"
#include "tests/test_model.c"
#include "tests/test_train.c"
#include "tests/test_eval.c"
#include "tests/test_serve.c"
#include "tests/test_features.c"
#include "tests/test_file.c"
#include "tests/test_hostile.c"

/* ---- >>runner: the table of tests, in file order, and main ----------------------------------- */

/* clang-format off */
static const test_case TESTS[] = {
    {"bad_arguments_refused_and_nothing_applied", test_bad_arguments_refused_and_nothing_applied},
#ifdef THREAD_LIMIT_TEST
    {"no_exit_when_threads_cannot_start", test_no_exit_when_threads_cannot_start},
#endif
#ifndef _WIN32
    {"orphaned_temporary_files_removed", test_orphaned_temporary_files_removed},
#endif
    {"every_movielens_format_loads_the_same_data", test_every_movielens_format_loads_the_same_data},
    {"columns_read_by_header_name_and_bom_skipped", test_columns_read_by_header_name_and_bom_skipped},
    {"paper_split_files_read_back_the_same_dataset", test_paper_split_files_read_back_the_same_dataset},
    {"bad_input_files_refused_with_file_and_line", test_bad_input_files_refused_with_file_and_line},
    {"logs_read_with_any_separator_quoting_line_end_and_header", test_logs_read_with_any_separator_quoting_line_end_and_header},
    {"columns_found_by_name_alias_or_number", test_columns_found_by_name_alias_or_number},
    {"ids_keep_blanks_quotes_and_bytes_unless_trimmed", test_ids_keep_blanks_quotes_and_bytes_unless_trimmed},
    {"ids_kept_as_written_through_training_saving_and_serving", test_ids_kept_as_written_through_training_saving_and_serving},
    {"plain_integer_ids_stay_numbers", test_plain_integer_ids_stay_numbers},
    {"long_and_nul_ids_refused_with_file_line", test_long_and_nul_ids_refused_with_file_line},
    {"weights_follow_their_positives", test_weights_follow_their_positives},
    {"events_and_low_ratings_filter_before_strengths", test_events_and_low_ratings_filter_before_strengths},
    {"item_filter_and_kcore_report_what_they_drop", test_item_filter_and_kcore_report_what_they_drop},
    {"min_rating_keeps_positives_and_reports_drops", test_min_rating_keeps_positives_and_reports_drops},
    {"holdout_latest_random_or_none_as_asked", test_holdout_latest_random_or_none_as_asked},
    {"popularity_figures_match_hand_computation", test_popularity_figures_match_hand_computation},
    {"eval_negatives_unrated_and_distinct", test_eval_negatives_unrated_and_distinct},
    {"synthetic_data_has_the_shape_asked_for", test_synthetic_data_has_the_shape_asked_for},
    {"real_movielens_loads_to_its_known_sizes", test_real_movielens_loads_to_its_known_sizes},
    {"sampler_draws_each_positive_once_and_unrated_negatives", test_sampler_draws_each_positive_once_and_unrated_negatives},
    {"sampler_negatives_uniform_by_chi_square", test_sampler_negatives_uniform_by_chi_square},
    {"sampler_order_is_the_keyed_feistel_permutation", test_sampler_order_is_the_keyed_feistel_permutation},
    {"pipeline_hash_follows_seed_and_epoch_not_threads", test_pipeline_hash_follows_seed_and_epoch_not_threads},
    {"every_gemm_path_matches_its_definition", test_every_gemm_path_matches_its_definition},
    {"neumf_gradients_match_finite_differences", test_neumf_gradients_match_finite_differences},
    {"gmf_gradients_match_finite_differences", test_gmf_gradients_match_finite_differences},
    {"mlp_gradients_match_finite_differences", test_mlp_gradients_match_finite_differences},
    {"mf_gradients_match_finite_differences", test_mf_gradients_match_finite_differences},
    {"weighted_gradients_match_finite_differences", test_weighted_gradients_match_finite_differences},
    {"float_finite_differences_agree_on_the_librarys_loss", test_float_finite_differences_agree_on_the_librarys_loss},
    {"sizes_at_the_edges_refused_or_bounded", test_sizes_at_the_edges_refused_or_bounded},
    {"nonfinite_scores_rank_last", test_nonfinite_scores_rank_last},
    {"divergence_stops_training_and_is_never_saved", test_divergence_stops_training_and_is_never_saved},
    {"output_sums_follow_their_definition", test_output_sums_follow_their_definition},
    {"eval_scores_match_forward", test_eval_scores_match_forward},
    {"scores_four_at_a_time_match_forward", test_scores_four_at_a_time_match_forward},
    {"scores_by_lanes_match_forward", test_scores_by_lanes_match_forward},
    {"scores_independent_of_batch_and_chunk", test_scores_independent_of_batch_and_chunk},
    {"training_end_to_end_lifts_hr", test_training_end_to_end_lifts_hr},
    {"loss_and_sigmoid_match_hand_values", test_loss_and_sigmoid_match_hand_values},
    {"adam_steps_match_hand_computation", test_adam_steps_match_hand_computation},
    {"sgd_moves_only_batch_rows_by_lr_times_gradient", test_sgd_moves_only_batch_rows_by_lr_times_gradient},
    {"dense_and_lazy_adam_differ_only_on_idle_rows", test_dense_and_lazy_adam_differ_only_on_idle_rows},
    {"training_bit_identical_on_any_thread_count", test_training_bit_identical_on_any_thread_count},
    {"training_bit_identical_with_a_preempted_thread", test_training_bit_identical_with_a_preempted_thread},
    {"training_bit_identical_with_thread_0_alone", test_training_bit_identical_with_thread_0_alone},
    {"pretrained_neumf_scores_as_its_parts", test_pretrained_neumf_scores_as_its_parts},
    {"mf_sgd_learns_and_survives_a_file", test_mf_sgd_learns_and_survives_a_file},
    {"fill_by_positive_is_the_epoch_reordered", test_fill_by_positive_is_the_epoch_reordered},
    {"per_example_sgd_is_train_step", test_per_example_sgd_is_train_step},
    {"train_step_is_forward_backward_and_update", test_train_step_is_forward_backward_and_update},
    {"fit_decay_is_a_hand_loop", test_fit_decay_is_a_hand_loop},
    {"fit_shuffle_is_the_samplers", test_fit_shuffle_is_the_samplers},
    {"training_blind_to_held_out_items", test_training_blind_to_held_out_items},
    {"fit_chooses_on_validation_never_test", test_fit_chooses_on_validation_never_test},
    {"fit_chooses_on_any_figure_of_many_items", test_fit_chooses_on_any_figure_of_many_items},
    {"tune_rungs_filled_and_paired", test_tune_rungs_filled_and_paired},
    {"tune_deterministic_and_blind_to_test", test_tune_deterministic_and_blind_to_test},
    {"tune_draws_als_trials", test_tune_draws_als_trials},
    {"tune_partners_lone_sgd_runs", test_tune_partners_lone_sgd_runs},
    {"model_average", test_model_average},
    {"train_epoch_each_is_each_alone", test_train_epoch_each_is_each_alone},
    {"tune_final_seeds_side_by_side", test_tune_final_seeds_side_by_side},
    {"tune_seeds_choose_their_epochs", test_tune_seeds_choose_their_epochs},
    {"als_epoch_solves_the_normal_equations", test_als_epoch_solves_the_normal_equations},
    {"als_fold_in_solves_the_least_squares", test_als_fold_in_solves_the_least_squares},
    {"als_epoch_reports_progress", test_als_epoch_reports_progress},
    {"als_bit_identical_on_any_thread_count", test_als_bit_identical_on_any_thread_count},
    {"als_settings_calls_and_files", test_als_settings_calls_and_files},
    {"rated_split_negatives_refused_own_test_item_ignored", test_rated_split_negatives_refused_own_test_item_ignored},
    {"many_item_metrics_match_hand_computation", test_many_item_metrics_match_hand_computation},
    {"many_item_metrics_match_a_sorted_ranking", test_many_item_metrics_match_a_sorted_ranking},
    {"many_item_splits_hold_each_positive_once", test_many_item_splits_hold_each_positive_once},
    {"saved_split_reads_back_the_same_lines", test_saved_split_reads_back_the_same_lines},
    {"metrics_match_hand_ranked_cases", test_metrics_match_hand_ranked_cases},
    {"validation_figures_match_hand_computation", test_validation_figures_match_hand_computation},
    {"validation_items_never_trained_on", test_validation_items_never_trained_on},
    {"recommend_filters_exact_on_hand_cases", test_recommend_filters_exact_on_hand_cases},
    {"recommend_users_equal_one_user_calls", test_recommend_users_equal_one_user_calls},
    {"item_fold_in_mirrors_user_fold_in", test_item_fold_in_mirrors_user_fold_in},
    {"fold_in_deterministic_and_exact_from_known_rows", test_fold_in_deterministic_and_exact_from_known_rows},
    {"projection_readers_agree_without_it", test_projection_readers_agree_without_it},
    {"similar_items_match_the_cosine_by_hand", test_similar_items_match_the_cosine_by_hand},
    {"similar_users_match_the_cosine_by_hand", test_similar_users_match_the_cosine_by_hand},
    {"model_add_serves_folded_in_ids", test_model_add_serves_folded_in_ids},
    {"model_grows_with_new_data", test_model_grows_with_new_data},
    {"serving_by_id_answers_as_the_index_forms", test_serving_by_id_answers_as_the_index_forms},
    {"serving_calls_start_no_team_unless_asked", test_serving_calls_start_no_team_unless_asked},
#ifndef _WIN32
    {"serving_threads_answer_as_one_thread", test_serving_threads_answer_as_one_thread},
#endif
    {"fixture_written_here_reads_back", test_fixture_written_here_reads_back},
    {"fuzz_seeds_are_valid_models", test_fuzz_seeds_are_valid_models},
    {"recommend_topk_matches_a_full_sort_by_raw_id", test_recommend_topk_matches_a_full_sort_by_raw_id},
    {"features_files_read_in_every_shape", test_features_files_read_in_every_shape},
    {"bad_features_files_refused_with_file_and_line", test_bad_features_files_refused_with_file_and_line},
    {"features_file_memory_bounded_by_its_size", test_features_file_memory_bounded_by_its_size},
    {"feature_gradients_match_finite_differences", test_feature_gradients_match_finite_differences},
    {"a_new_item_from_its_features_served_saved_and_loaded", test_a_new_item_from_its_features_served_saved_and_loaded},
    {"cold_split_holds_items_out_whole_and_poison_changes_nothing", test_cold_split_holds_items_out_whole_and_poison_changes_nothing},
    {"averaged_features_models_score_as_their_mean", test_averaged_features_models_score_as_their_mean},
    {"tune_searches_side_features", test_tune_searches_side_features},
    {"saved_models_load_bit_identical", test_saved_models_load_bit_identical},
    {"resumed_training_equals_an_unbroken_run", test_resumed_training_equals_an_unbroken_run},
    {"corrupt_models_refused", test_corrupt_models_refused},
    {"format_3_files_still_read", test_format_3_files_still_read},
    {"verified_open_skips_only_whole_file_checks", test_verified_open_skips_only_whole_file_checks},
    {"in_place_answers_equal_the_copy", test_in_place_answers_equal_the_copy},
    {"opening_in_place_allocates_no_parameters", test_opening_in_place_allocates_no_parameters},
    {"workspace_forms_allocate_nothing", test_workspace_forms_allocate_nothing},
    {"model_read_file_opens_in_place", test_model_read_file_opens_in_place},
    {"in_place_models_only_serve_and_save_their_file", test_in_place_models_only_serve_and_save_their_file},
    {"unreadable_buffers_refused_in_place", test_unreadable_buffers_refused_in_place},
    {"int8_rows_match_hand_quantization", test_int8_rows_match_hand_quantization},
    {"rated_lists_hold_exactly_the_users_items", test_rated_lists_hold_exactly_the_users_items},
    {"saves_replace_the_file_whole", test_saves_replace_the_file_whole},
#ifndef _WIN32
    {"save_keeps_the_file_permissions", test_save_keeps_the_file_permissions},
    {"save_follows_no_planted_link", test_save_follows_no_planted_link},
    {"failed_save_leaves_the_old_model", test_failed_save_leaves_the_old_model},
#endif
    {"evaluation_and_serving_memory_bounded_by_the_model_and_threads", test_evaluation_and_serving_memory_bounded_by_the_model_and_threads},
    {"memory_bounded_by_the_model_file", test_memory_bounded_by_the_model_file},
    {"fold_in_cost_bounded_by_the_model_file", test_fold_in_cost_bounded_by_the_model_file},
    {"empty_arrays_read_nothing", test_empty_arrays_read_nothing},
    {"validation_item_is_rated", test_validation_item_is_rated},
    {"absurd_settings_and_values_refused", test_absurd_settings_and_values_refused},
    {"limits_said_as_they_are", test_limits_said_as_they_are},
    {"file_counters_at_their_bounds_leave_headroom", test_file_counters_at_their_bounds_leave_headroom},
    {"header_sizes_past_the_address_space_refused", test_header_sizes_past_the_address_space_refused},
    {"values_bounded_alike_in_place_and_copied", test_values_bounded_alike_in_place_and_copied},
    {"options_checked_before_anything_is_sized", test_options_checked_before_anything_is_sized},
    {"evaluation_refuses_data_that_is_not_the_models", test_evaluation_refuses_data_that_is_not_the_models},
    {"hostile_inputs_refused_or_read", test_hostile_inputs_refused_or_read},
    {"ids_chosen_against_the_hash_cost_what_random_ids_do", test_ids_chosen_against_the_hash_cost_what_random_ids_do},
    {"filters_settle_in_bounded_rounds", test_filters_settle_in_bounded_rounds},
    {"sorts_are_n_log_n_whatever_the_order", test_sorts_are_n_log_n_whatever_the_order},
    {"binary_search_finds_every_cut", test_binary_search_finds_every_cut},
    {"every_failed_allocation_returns_nomem", test_every_failed_allocation_returns_nomem},
    {"calls_said_to_allocate_nothing_allocate_nothing", test_calls_said_to_allocate_nothing_allocate_nothing},
};
/* clang-format on */

/* Whether a test runs: its name holds one of the only[] names (any, when none are given) and
   none of the except[] names. */
static int chosen(const char *name, const char *const *only, int nonly, const char *const *except, int nexcept)
{
    int j, in = nonly == 0;
    for (j = 0; j < nonly; j++) in |= strstr(name, only[j]) != NULL;
    for (j = 0; j < nexcept; j++) in &= strstr(name, except[j]) == NULL;
    return in;
}

int main(int argc, char **argv)
{
    int i, passed = 0, failed = 0, skipped = 0, list = 0, nonly = 0, nexcept = 0;
    const char *only[16], *except[16];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--print-hash")) {
            printf("%016llx\n", (unsigned long long)training_hash(2, 0));
            return 0;
#ifdef THREAD_LIMIT_TEST
        } else if (!strcmp(argv[i], "--thread-limit-child") && i + 3 < argc) {
            return thread_limit_child(atol(argv[i + 1]), atol(argv[i + 2]), atoi(argv[i + 3]));
#endif
        } else if (!strcmp(argv[i], "--write-logs") && i + 1 < argc) {
            return write_logs(argv[i + 1]) ? 0 : 1;
        } else if (!strcmp(argv[i], "--set-epoch") && i + 2 < argc) {
            return set_file_epoch(argv[i + 1], argv[i + 2]) ? 0 : 1;
        } else if (!strcmp(argv[i], "--write-seeds") && i + 1 < argc) {
            return write_fuzz_seeds(argv[i + 1]) ? 0 : 1;
        } else if (!strcmp(argv[i], "--expect-hash") && i + 1 < argc) {
            g_expect_hash_file = argv[++i];
        } else if (!strcmp(argv[i], "--list")) {
            list = 1;
        } else if (!strcmp(argv[i], "--except") && i + 1 < argc && nexcept < 16) {
            except[nexcept++] = argv[++i];
        } else if (argv[i][0] != '-' && nonly < 16) {
            only[nonly++] = argv[i];
        } else {
            printf("tests: unknown or repeated once too often: '%s' (see the comment atop tests.c)\n", argv[i]);
            return 2;
        }
    }
    if (list) { /* the tests' names (those the filters keep), one a line, in the order run */
        for (i = 0; i < (int)(sizeof TESTS / sizeof *TESTS); i++)
            if (chosen(TESTS[i].name, only, nonly, except, nexcept)) printf("%s\n", TESTS[i].name);
        return 0;
    }
    if (!make_scratch_dir()) {
        printf("cannot make a scratch folder: %s\n", strerror(errno));
        return 2;
    }
    printf("ncf.h %s tests, %d threads%s\n", ncf_version(), ncf_set_threads(0),
#ifdef _OPENMP
           ""
#else
           " (no OpenMP)"
#endif
    );
    for (i = 0; i < (int)(sizeof TESTS / sizeof *TESTS); i++) {
        int before = g_failed_checks;
        double t0;
        if (!chosen(TESTS[i].name, only, nonly, except, nexcept)) continue;
        printf("%s\n", TESTS[i].name);
        fflush(stdout);
        g_skipped = 0, t0 = now_s();
        TESTS[i].fn();
        if (g_failed_checks != before) failed++, printf("  FAILED");
        else if (g_skipped) skipped++, printf("  skipped");
        else passed++, printf("  ok");
        printf(" (%.1f s)\n", now_s() - t0);
        fflush(stdout);
    }
    files_in_dir(g_dir, "", 1);
    if (rmdir(g_dir) != 0) printf("could not remove %s\n", g_dir);
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
