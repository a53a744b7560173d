#!/bin/sh
# tests/demo_checks.sh BUILD DEMO... - the demo run as a user runs it, and the README's
# example built with the README's compile line and run (make test; make windows runs the
# first check with its demo.exe under wine: DEMO is then that command). Each check prints
# "name ... ok" (or FAILED and its log) and records pass or fail in BUILD/checks. Needs the
# example logs in BUILD (tests --write-logs BUILD).
#   ONLY=save_best tests/demo_checks.sh BUILD wine build/demo.exe     one check
B=$1
shift
DEMO="$*"
SYN="--synthetic_users 300 --synthetic_items 200 --synthetic_ratings 9000"

check() { # NAME FUNCTION
    printf '%s ... ' "$1"
    if $2 > "$B/check.log" 2>&1; then echo ok; echo pass >> "$B/checks"
    else echo FAILED; cat "$B/check.log"; echo fail >> "$B/checks"; fi
}
demo() { $DEMO "$@"; }

# 4 epochs, the epoch chosen on validation (the default) kept by --save_best as it is found and
# by --save at the end; --load of either prints the chosen epoch's HR and NDCG, which a
# last-epoch file would not (unless the last is the chosen one)
save_best() {
    demo $SYN --train_epochs 4 --save_best "$B/best.ncf" --save "$B/chosen.ncf" > "$B/best.log" &&
        demo $SYN --load "$B/best.ncf" --train_epochs 0 > "$B/best_load.log" &&
        demo $SYN --load "$B/chosen.ncf" --train_epochs 0 > "$B/chosen_load.log" &&
        n=$(tr -d '\r' < "$B/best.log" | sed -n 's/^Chosen on validation HR@10: epoch \([0-9]*\) .*/\1/p') && # (Windows: CRLF)
        b=$(tr -d '\r' < "$B/best.log" | grep "^Iteration $n: " | grep -o '^Iteration [0-9]*: HR = [0-9.]*, NDCG = [0-9.]*,') &&
        [ -n "$b" ] && grep -q "^$b" "$B/best_load.log" && grep -q "^$b" "$B/chosen_load.log" &&
        tr -d '\r' < "$B/best.log" | grep -q "^saved .*chosen.ncf: epoch $n, the one chosen on validation"
}
check "demo --save and --save_best keep the epoch chosen on validation" save_best
[ "${ONLY:-}" = save_best ] && exit 0

no_folder() {
    ! demo $SYN --save "$B/no_such_dir/m.ncf" > "$B/nodir.log" 2>&1 && grep -q 'cannot create' "$B/nodir.log" &&
        ! grep -q Iteration "$B/nodir.log"
}
check "demo stops before training when --save cannot be written" no_folder

own_seed() {
    demo $SYN --seed 3 --train_epochs 2 --save "$B/s3.ncf" > "$B/s3.log" &&
        demo $SYN --load "$B/s3.ncf" --train_epochs 0 > "$B/s3_load.log" &&
        grep -q "^$(grep -o '^Iteration 2: HR = [0-9.]*, NDCG = [0-9.]*' "$B/s3.log")," "$B/s3_load.log"
}
check "demo --load evaluates with the model's own seed" own_seed

lacking_ids() {
    printf '1::10::5::1\n1::20::5::2\n2::10::5::1\n2::30::5::2\n' > "$B/ids_a.dat" &&
        printf '1::10::5::1\n1::20::5::2\n3::10::5::1\n3::30::5::2\n' > "$B/ids_b.dat" &&
        demo --data "$B/ids_a.dat" --min_ratings 1 --eval_negatives 1 --train_epochs 1 --save "$B/ids.ncf" > /dev/null &&
        ! $DEMO --data "$B/ids_b.dat" --min_ratings 1 --eval_negatives 1 --load "$B/ids.ncf" --train_epochs 0 > "$B/ids.log" 2>&1 &&
        grep -q 'the data lacks 1 of the model.s users' "$B/ids.log"
}
check "demo --load refuses data that lacks ids of the model" lacking_ids

flags() {
    demo $SYN --train_epochs=1 --seed=2 > "$B/flags.log" && grep -q '^Iteration 1:' "$B/flags.log" &&
        ! $DEMO --trian_epochs 3 2> "$B/flags.log" && grep -q "unknown flag '--trian_epochs'" "$B/flags.log" &&
        ! $DEMO --beta2 0.99999999 2> "$B/flags.log" && grep -q 'rounds to 1' "$B/flags.log"
}
check "demo flags: --flag=value; a misspelt flag is unknown; --beta2 that rounds to 1 refused" flags

saves_first() {
    rm -f "$B/rec.ncf" && ! $DEMO $SYN --train_epochs 1 --save "$B/rec.ncf" --recommend 999999 > "$B/rec.log" 2>&1 &&
        test -f "$B/rec.ncf"
}
check "demo saves before --recommend of an unknown user" saves_first

# the epoch chosen (the CSV's first maximum of validation HR, column 9) is the one whose test line
# the demo reports at the end (its sampled figures as that epoch printed them, then the full
# ranking read once), beside popularity's; --patience stops 2 evaluations after it;
# --no_validation chooses nothing and reports and saves the last epoch
validation() {
    demo $SYN --train_epochs 4 --log "$B/val.csv" > "$B/val.log" &&
        n=$(awk -F, 'NR > 1 && $1 != "popularity" && $9 != "" && (b == "" || $9 > b) { b = $9; n = $1 } END { print n }' "$B/val.csv") &&
        grep -q "^Chosen on validation HR@10: epoch $n " "$B/val.log" &&
        at=$(grep -A1 "^Iteration $n:" "$B/val.log" | sed -n 2p) && end=$(grep -A1 '^Chosen on validation' "$B/val.log" | sed -n 2p) &&
        case "$end" in "$at   full ranking: HR@10 "*) ;; *) false ;; esac &&
        [ "$(grep -c 'full ranking' "$B/val.log")" -eq 4 ] && # (popularity's twice, the chosen test's)
        demo $SYN --train_epochs 4 --eval full > "$B/val_full.log" &&
        [ "$(grep -A1 "^Iteration $n:" "$B/val_full.log" | sed -n 2p)" = "$end" ] &&
        grep -A2 '^Chosen on validation' "$B/val.log" | grep -q '^    popularity ' &&
        demo $SYN --train_epochs 30 --patience 2 --log "$B/pat.csv" > "$B/pat.log" &&
        n=$(sed -n 's/^Stopping: no validation gain in 2 evaluations (--patience 2); epoch \([0-9]*\) stays.*/\1/p' "$B/pat.log") &&
        [ -n "$n" ] && [ "$(tail -n 1 "$B/pat.csv" | cut -d, -f1)" = $((n + 2)) ] &&
        demo $SYN --train_epochs 2 --no_validation --save "$B/last.ncf" > "$B/noval.log" &&
        grep -q '^Last epoch, 2 (no validation: no epoch is chosen' "$B/noval.log" &&
        grep -q 'saved .*last.ncf: epoch 2, the last (no validation' "$B/noval.log" && ! grep -q '^    validation' "$B/noval.log" &&
        demo $SYN --train_epochs 0 > "$B/untrained.log" && # (an untrained model: popularity wins, and it says so)
        grep -q '^warning: the model is no better than recommending the most popular items on validation' "$B/untrained.log"
}
check "demo chooses the epoch on validation by default, reports it beside popularity, warns, stops with --patience" validation

log_rows() {
    demo $SYN --train_epochs 3 --epochs_between_evals 2 --log "$B/every.csv" > /dev/null &&
        [ "$(cut -d, -f1,2,3 "$B/every.csv" | tail -n +2 | tr '\n' ' ' | sed 's/[0-9]\.[0-9]*/x/g')" = "popularity,,x 0,,x 1,x, 2,x,x 3,x,x " ]
}
check "demo --log has the popularity baseline and every epoch; the untrained model has no loss" log_rows

plot() {
    demo $SYN --validation --train_epochs 3 --plot "$B/curves.svg" > /dev/null && grep -q '</svg>' "$B/curves.svg" &&
        grep -q 'best: epoch' "$B/curves.svg" &&
        { ! command -v rsvg-convert > /dev/null ||
            { rsvg-convert "$B/curves.svg" -o "$B/curves.png" && [ "$(head -c 4 "$B/curves.png" | tail -c 3)" = PNG ]; }; }
}
if command -v rsvg-convert > /dev/null; then check "demo --plot draws an image (rendered by rsvg-convert)" plot
else check "demo --plot draws an image (rsvg-convert not installed: checked as text)" plot; fi

plays() {
    demo --data "$B/plays.tsv" --train_epochs 2 --recommend 7 > "$B/plays.log" &&
        grep -q '^read as: TAB-separated, header, user=userID item=artistID rating=weight, no timestamps$' "$B/plays.log" &&
        grep -q '^held out: one interaction per user, drawn by the seed' "$B/plays.log" &&
        grep -q '^    popularity  HR@10' "$B/plays.log" && grep -q '^ 10  *[0-9][0-9]*  ' "$B/plays.log"
}
check "demo on a TAB play-count log with a header: read as written; recommends by its ids" plays

# --tune: the trial table (printed and in --log; the winner's seeds averaged, rung 3, where it has
# them), the winner trained on training + validation
# and its test figures beside popularity's, the saved model the one reported, the same table on 1
# and 2 threads; a budget too small for a run trains the defaults; a search killed leaves no file
tune() {
    demo $SYN --tune 4 --threads 2 --save "$B/tuned.ncf" --log "$B/tune.csv" > "$B/tune.log" &&
        grep -q '^tune: successive halving on the validation split, seed 1, a planned budget of 4 s' "$B/tune.log" &&
        grep -q '^chosen on validation: trial [0-9]*, ' "$B/tune.log" &&
        grep -A2 '^Tuned, ' "$B/tune.log" | grep -q '^    popularity ' &&
        grep -q '^saved .*tuned.ncf: the tuned settings trained on training + validation' "$B/tune.log" &&
        runs=$(tail -n +2 "$B/tune.csv" | wc -l) && [ "$runs" -ge 4 ] &&
        [ "$(grep -c '^ *[0-9][0-9]* *[0-3]  [MGN]' "$B/tune.log")" -eq "$runs" ] &&
        avg=$(awk -F, '$2 == 3' "$B/tune.csv" | wc -l) && [ "$avg" -le 1 ] &&
        { [ "$avg" -eq 0 ] || grep -q '^its [0-9]* seeds on training alone, their scores averaged: validation' "$B/tune.log"; } &&
        demo $SYN --tune 4 --threads 1 --log "$B/tune1.csv" > /dev/null && cmp "$B/tune.csv" "$B/tune1.csv" &&
        demo $SYN --load "$B/tuned.ncf" --train_epochs 0 > "$B/tuned_load.log" &&
        [ "$(grep -A1 '^Tuned, ' "$B/tune.log" | sed -n 2p)" = "$(grep '^    test ' "$B/tuned_load.log" | tail -n 1)" ] &&
        demo $SYN --tune 0.001 --train_epochs 1 > "$B/tiny.log" &&
        grep -q '^tune: a budget of 0 s is too small for one run .*: training the defaults' "$B/tiny.log" &&
        grep -q '^Chosen on validation HR@10: epoch 1 ' "$B/tiny.log" &&
        ! demo $SYN --tune --no_validation > "$B/tnv.log" 2>&1 && grep -q 'does not go with .*--no_validation' "$B/tnv.log" &&
        { rm -f "$B/killed.ncf"; # (the demo itself in the background, not a shell running it: the kill must reach it)
          $DEMO --synthetic_users 3000 --synthetic_items 1500 --synthetic_ratings 150000 --tune 60 --save "$B/killed.ncf" \
              > "$B/killed.log" 2>&1 & pid=$!; sleep 2; kill -TERM $pid; wait $pid; [ $? -ne 0 ]; } &&
        sleep 1 && [ ! -e "$B/killed.ncf" ] && [ -z "$(ls "$B" | grep '^killed\.ncf\.tmp-')" ]
}
check "demo --tune: the table, the winner retrained and reported once, saved; the same on 1 and 2 threads" tune

# --seeds: three MF runs of SGD one example a step trained in step, their average evaluated,
# chosen and saved (its 3 x 8 factors), the same figures on 1 and 2 threads; a NeuMF is refused
seeds() {
    mf="--model mf --num_factors 8 --optimizer sgd --batch_size 1 --learning_rate 0.03 --init_sd 0.1 --train_epochs 3"
    demo $SYN $mf --seeds 3 --threads 2 --save "$B/seeds.ncf" > "$B/seeds.log" &&
        grep -q '^seeds: 3 models, seeds 1 to 3, trained in step; their average (MF, 24 factors)' "$B/seeds.log" &&
        demo $SYN $mf --seeds 3 --threads 1 > "$B/seeds1.log" &&
        [ "$(grep -c '^Iteration' "$B/seeds.log")" -eq 4 ] &&
        [ "$(grep -o '^Iteration [0-9]*: HR = [0-9.]*, NDCG = [0-9.]*' "$B/seeds.log")" = \
          "$(grep -o '^Iteration [0-9]*: HR = [0-9.]*, NDCG = [0-9.]*' "$B/seeds1.log")" ] &&
        demo $SYN $mf > "$B/seed1.log" &&
        [ "$(grep '^Iteration 3:' "$B/seed1.log" | cut -d, -f1-2)" != "$(grep '^Iteration 3:' "$B/seeds.log" | cut -d, -f1-2)" ] &&
        n=$(tr -d '\r' < "$B/seeds.log" | sed -n 's/^Chosen on validation HR@10: epoch \([0-9]*\) .*/\1/p') &&
        demo $SYN --load "$B/seeds.ncf" --train_epochs 0 > "$B/seeds_load.log" &&
        grep -q "^$(grep -o "^Iteration $n: HR = [0-9.]*, NDCG = [0-9.]*" "$B/seeds.log")," "$B/seeds_load.log" &&
        grep -q '^model: MF, factors 24' "$B/seeds_load.log" &&
        ! demo $SYN --seeds 2 > "$B/seeds_neumf.log" 2>&1 && grep -q 'a NeuMF cannot be averaged' "$B/seeds_neumf.log"
}
check "demo --seeds: MF seeds trained in step, their average chosen and saved, the same on 1 and 2 threads" seeds

weighting() {
    demo --data "$B/plays.tsv" --weighting log --weight_alpha 2 --train_epochs 2 > "$B/weighted.log" &&
        grep -q '^read as: TAB-separated, header, user=userID item=artistID rating=weight strength=weight, no timestamps$' "$B/weighted.log" &&
        grep -q '^weights: 1 + 2\*log(1 + strength): from [0-9.]* to [0-9.]* (--weighting)$' "$B/weighted.log" &&
        ! demo --data "$B/plays.tsv" --weighting log --weight_col song > "$B/wc.log" 2>&1 && grep -q "no column named 'song'" "$B/wc.log" &&
        ! demo --data "$B/plays.tsv" --weighting sqrt > "$B/ws.log" 2>&1 && grep -q 'none, linear or log' "$B/ws.log"
}
check "demo --weighting: strengths weigh the positives, and say how" weighting

# ALS: an MF fitted to every cell, said as such, above popularity; saved and resumed as ALS;
# refused for a NeuMF with the reason
als() {
    demo $SYN --model mf --optimizer als --mf_regularization 0.1 --train_epochs 3 --save "$B/als.ncf" > "$B/als.log" &&
        grep -q 'ALS, unobserved 0.1, L2 0.1' "$B/als.log" && grep -q '^Iteration 3: .*positives/s' "$B/als.log" &&
        ! grep -q 'no better than recommending the most popular' "$B/als.log" &&
        demo $SYN --load "$B/als.ncf" --train_epochs 5 > "$B/als_more.log" &&
        grep -q 'ALS, unobserved 0.1' "$B/als_more.log" && grep -q '^Iteration 5: .*positives/s' "$B/als_more.log" &&
        ! demo $SYN --optimizer als --train_epochs 1 > "$B/als_bad.log" 2>&1 && grep -q 'ALS trains MF' "$B/als_bad.log"
}
check "demo --optimizer als: an MF fitted to every cell, saved and resumed as ALS" als

books() {
    demo --data "$B/books.csv" --min_rating 1 --train_epochs 2 --save "$B/books.ncf" --recommend 276730 > "$B/books.log" &&
        grep -q "^read as: ';'-separated, header, user=User-ID item=ISBN rating=Book-Rating, no timestamps, item ids as text$" "$B/books.log" &&
        grep -q '^kept .*--min_rating 1 dropped [1-9][0-9]* interactions' "$B/books.log" &&
        grep -q '^  [1-9]  *0[0-9]*X*  ' "$B/books.log"
}
check "demo on a quoted ';' export with ISBN ids: --min_rating; the ids come back as written" books

holdout_none() {
    demo --data "$B/books.csv" --holdout none --train_epochs 1 --save "$B/none.ncf" > "$B/none.log" &&
        grep -q '^No evaluation' "$B/none.log" && ! grep -q '^Iteration' "$B/none.log" && test -s "$B/none.ncf"
}
check "demo --holdout none trains on everything and saves; nothing to evaluate" holdout_none

planted() {
    echo precious > "$B/victim" && ln -sf victim "$B/pl.ncf.demo-write-check" &&
        demo $SYN --train_epochs 1 --save "$B/pl.ncf" > /dev/null && [ "$(cat "$B/victim")" = precious ] &&
        ! $DEMO $SYN --save "$B" > "$B/sv.log" 2>&1 && grep -q 'is a folder, not a file' "$B/sv.log" &&
        ! $DEMO $SYN --save '' > "$B/sv.log" 2>&1 && grep -q 'an empty path' "$B/sv.log" && ! grep -q '^Iteration' "$B/sv.log"
}
check "demo checks --save before training and writes nothing through a planted name" planted

int8_checkpoints() {
    ! $DEMO $SYN --int8 --checkpoint_every 1 --save "$B/i8.ncf" > "$B/i8.log" 2>&1 &&
        grep -q 'cannot resume a run exactly' "$B/i8.log" && ! test -f "$B/i8.ncf"
}
check "demo refuses --int8 checkpoints (they cannot resume exactly)" int8_checkpoints

diverges() {
    rm -f "$B/div.ncf" && ! $DEMO $SYN --optimizer sgd --learning_rate 100 --train_epochs 6 --save "$B/div.ncf" > "$B/div.log" 2>&1 &&
        grep -q 'saved the last finite model' "$B/div.log" && demo $SYN --load "$B/div.ncf" --train_epochs 0 > /dev/null
}
check "demo saves the last finite model when training diverges" diverges

serves() {
    demo --load "$B/books.ncf" --recommend 276730,276731 --recommend_for 034545104X,0440213321 --similar 034545104X \
        --recommend_k 3 > "$B/serve.log" &&
        [ "$(grep -c '^Top 3 for user 2767' "$B/serve.log")" = 2 ] &&
        grep -q '^Top 3 for a new user with 2 items .folded in' "$B/serve.log" &&
        grep -q '^The 3 items most like 034545104X' "$B/serve.log" && ! grep -q '^Iteration' "$B/serve.log" &&
        printf '0440213324\n034545107X\n' > "$B/allow.txt" &&
        demo --load "$B/books.ncf" --recommend 276730 --allow "$B/allow.txt" > "$B/allow.log" &&
        [ "$(grep -c '^  [12]  ' "$B/allow.log")" -le 2 ] &&
        ! grep -v '^  [12]  \(0440213324\|034545107X\)  \|^Top\|^serving' "$B/allow.log"
}
check "demo serves from a model file alone: users; a new user's items; similar items; an allow-list" serves

# ids as written: a title with a comma (quoted), one with a blank at its end beside the same title
# without it; lists on the command line with CSV quoting, and in files one id a line
titles() {
    awk 'BEGIN { print "user,game"; for (u = 1; u <= 60; u++) for (j = 0; j < 12; j++) {
             t = (u + 3 * j) % 30; s = t == 0 ? "\"Papers, Please\"" : t == 1 ? "Fallout 4 " : t == 2 ? "Fallout 4" : "Game " t;
             if (t == 3) s = "\"Say \"\"Hi\"\"\"";
             print "u" u "," s } }' > "$B/titles.csv" &&
        demo --data "$B/titles.csv" --eval_negatives 10 --train_epochs 1 --save "$B/titles.ncf" > "$B/titles.log" &&
        grep -q '^[0-9]* item id fields begin or end with a blank: kept as written' "$B/titles.log" &&
        demo --load "$B/titles.ncf" --recommend_for '"Papers, Please",Fallout 4 ' --similar 'Fallout 4 ' \
            --recommend_k 3 > "$B/titles_serve.log" &&
        grep -q '^Top 3 for a new user with 2 items' "$B/titles_serve.log" &&
        grep -q '^The 3 items most like Fallout 4  ' "$B/titles_serve.log" &&
        printf 'Papers, Please\nFallout 4 \n' > "$B/titles_items.txt" && printf 'u1\nu2\n' > "$B/titles_users.txt" &&
        demo --load "$B/titles.ncf" --recommend_for_file "$B/titles_items.txt" --recommend_file "$B/titles_users.txt" \
            --recommend_k 3 > "$B/titles_files.log" &&
        grep -q '^Top 3 for a new user with 2 items' "$B/titles_files.log" &&
        [ "$(grep -c '^Top 3 for user u[12] ' "$B/titles_files.log")" = 2 ] &&
        ! demo --load "$B/titles.ncf" --recommend_for 'Papers, Please' > "$B/titles_bad.log" 2>&1 &&
        grep -q "unknown item 'Papers'" "$B/titles_bad.log" &&
        ! demo --load "$B/titles.ncf" --recommend_for '"Papers, Please' > "$B/titles_bad.log" 2>&1 &&
        grep -q 'a quote never closed' "$B/titles_bad.log" &&
        demo --data "$B/titles.csv" --eval_negatives 10 --train_epochs 1 --trim_ids --save "$B/trimmed.ncf" > "$B/trim.log" &&
        grep -q 'item id fields begin or end with a blank: dropped (--trim_ids)' "$B/trim.log" &&
        demo --load "$B/trimmed.ncf" --similar 'Fallout 4 ' --trim_ids --recommend_k 3 > /dev/null &&
        ! demo --load "$B/trimmed.ncf" --similar 'Fallout 4 ' --recommend_k 3 > /dev/null 2>&1 &&
        demo --load "$B/titles.ncf" --recommend u1,u2 --similar 'Fallout 4 ' --recommend_k 29 --output csv \
            > "$B/titles.csv.out" 2> /dev/null &&
        [ "$(head -n 1 "$B/titles.csv.out" | tr -d '\r')" = "kind,query,rank,id,score,name" ] &&
        [ "$(grep -c '^user,u[12],' "$B/titles.csv.out")" -ge 2 ] &&
        grep -q '^similar,"Fallout 4 ",[0-9]*,"Papers, Please",' "$B/titles.csv.out" &&
        demo --load "$B/titles.ncf" --recommend u1 --similar 'Fallout 4' --recommend_k 3 --output json > "$B/titles.json" \
            2> /dev/null &&
        [ "$(grep -c '^{"kind":"\(user\|similar\)","query":"\(u1\|Fallout 4\)","items":\[{"id":' "$B/titles.json")" = 2 ] &&
        demo --load "$B/titles.ncf" --similar 'Say "Hi"' --recommend_k 29 --output json > "$B/titles_quote.json" 2> /dev/null &&
        grep -q '^{"kind":"similar","query":"Say \\"Hi\\"","items":\[.*{"id":"Papers, Please","score":' "$B/titles_quote.json" &&
        demo --load "$B/titles.ncf" --similar_users u7 --item_for u1,u2,u3 --recommend_k 4 > "$B/titles_users.log" &&
        grep -q '^The 4 users most like u7 ' "$B/titles_users.log" &&
        grep -q '^The 4 users a new item taken by 3 users suits best' "$B/titles_users.log" &&
        [ "$(grep -c '^  [1-4]   *u[0-9]*  ' "$B/titles_users.log")" = 8 ] &&
        ! sed -n '/new item taken by/,$p' "$B/titles_users.log" | grep -q '^  [1-4]   *u[123]  ' 
}
check "demo ids as written: quoted lists, blanks kept (or --trim_ids), id files, --output csv and json, similar users, a new item" titles

# --export_embeddings: for MF and GMF, the inner product of a user's and an item's vectors is
# the logit less what is the same for all of the user's items, so two items' inner products
# differ as their logits do (read back from the CSV files, checked against --recommend)
embeddings() {
    awk 'BEGIN { print "user,item"; for (u = 1; u <= 80; u++) for (j = 0; j < 10; j++) print "u" u ",i" (u * 7 + j * j) % 50 }' \
        > "$B/emb.csv" || return 1
    for model in mf gmf; do
        demo --data "$B/emb.csv" --model $model --num_factors 6 --learning_rate 0.01 --eval_negatives 10 --train_epochs 5 \
            --save "$B/emb.ncf" > /dev/null &&
            demo --load "$B/emb.ncf" --export_embeddings "$B/emb" > "$B/emb.log" &&
            grep -q '^exported .*emb.users.npy, .items.npy and their .csv: 80 users and 50 items, 7 values each' "$B/emb.log" &&
            [ "$(wc -c < "$B/emb.items.npy")" = $((128 + 50 * 7 * 4)) ] && [ "$(head -c 6 "$B/emb.items.npy" | tail -c 5)" = NUMPY ] &&
            demo --load "$B/emb.ncf" --recommend u5 --recommend_k 5 --output json 2> /dev/null |
            tr -d '\r' | sed 's/.*"items":\[//; s/\]}$//; s/},{/\n/g; s/[{}"]//g; s/id://g; s/score://g' > "$B/emb.top" &&
            awk -F, -v answers="$B/emb.top" '
                FILENAME ~ /users.csv$/ && $1 == "u5" { for (d = 2; d <= NF; d++) u[d] = $d; next }
                FILENAME ~ /items.csv$/ && FNR > 1 { dot = 0; for (d = 2; d <= NF; d++) dot += u[d] * $d; ip[$1] = dot }
                END {
                    n = 0
                    while ((getline line < answers) > 0) { split(line, f, ","); item[++n] = f[1]; z[n] = f[2] }
                    if (n != 5) { print n " answers"; exit 1 }
                    for (k = 2; k <= n; k++) {
                        dz = z[1] - z[k]; dip = ip[item[1]] - ip[item[k]]
                        if (dz - dip > 1e-5 || dip - dz > 1e-5) { print "rank " k ": logits differ by " dz ", inner products by " dip; exit 1 }
                    }
                }' "$B/emb.users.csv" "$B/emb.items.csv" || return 1
    done
}
check "demo --export_embeddings: .npy and .csv whose inner products differ as MF's and GMF's logits" embeddings

recommend_all() {
    demo --load "$B/books.ncf" --recommend_all "$B/all.csv" --recommend_k 2 --probabilities > /dev/null 2>&1 &&
        [ "$(head -n 1 "$B/all.csv")" = "kind,query,rank,id,score,name" ] && [ "$(wc -l < "$B/all.csv")" = 801 ] &&
        [ "$(grep -c '^recommend,[^,]*,[12],[^,]*,0\.[0-9]*,$' "$B/all.csv")" = 800 ]
}
check "demo --recommend_all writes every user's top K as --output csv writes answers" recommend_all

grows() {
    head -n 8000 "$B/books.csv" > "$B/older.csv" &&
        demo --data "$B/older.csv" --holdout none --train_epochs 1 --save "$B/older.ncf" > /dev/null &&
        demo --data "$B/books.csv" --load "$B/older.ncf" --train_epochs 2 > "$B/grow.log" &&
        grep -q '^grew .*older.ncf to the data: 400 users' "$B/grow.log" && grep -q '^Iteration 2:' "$B/grow.log"
}
check "demo --load FILE --data NEWDATA grows the model and trains on" grows

export_c() {
    demo --load "$B/books.ncf" --int8 --export_c "$B/books-int8.h" > "$B/export.log" &&
        grep -q '^exported .*books-int8.h: books_int8\[[0-9]*\], model file format 5, int8 rows$' "$B/export.log" &&
        grep -q '__attribute__((aligned(8)))' "$B/books-int8.h" &&
        grep -q '^static const unsigned char books_int8\[' "$B/books-int8.h" || return 1
    # file names that are the C library's names, main, ncf.h's own or not ASCII: arrays that a
    # program serving them compiles with, each its own name
    rm -rf "$B/names" && mkdir -p "$B/names" && printf '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <stdint.h>\n#include <math.h>\n#include "ncf.h"\n' > "$B/names/use.c" &&
    for n in main NULL size_t printf ncf_free é ü 2024; do
        demo --load "$B/books.ncf" --int8 --export_c "$B/names/$n.h" > "$B/export.log" &&
            printf '#include "%s.h"\n' "$n" >> "$B/names/use.c" || return 1
    done &&
    printf 'int main(void) { return (int)(sizeof main_model + sizeof xc3xa9 + sizeof xc3xbc + sizeof ncf_free_model); }\n' >> "$B/names/use.c" &&
    ${CC:-cc} -std=c99 -Wall -Werror -I. -I"$B/names" "$B/names/use.c" -o "$B/names/use" -lm
}
check "demo --export_c writes the model as an aligned C array named after the file, a name C compiles" export_c

# a model whose epoch counter sits at the bound resumes (0.6.1 overflowed the count past
# 2^31 - 1 and wrote past its rows); one past the bound is refused
epoch_bound() {
    demo $SYN --train_epochs 1 --save "$B/bound.ncf" > /dev/null && "$B/tests" --set-epoch "$B/bound.ncf" 1073741824 &&
        demo $SYN --load "$B/bound.ncf" --train_epochs 3 > "$B/bound.log" && grep -q '^Iteration 1073741824: HR' "$B/bound.log" &&
        "$B/tests" --set-epoch "$B/bound.ncf" 2147483647 &&
        ! demo $SYN --load "$B/bound.ncf" --train_epochs 3 > "$B/bound.log" 2>&1 &&
        grep -q 'epoch 2147483647 is past what training reaches' "$B/bound.log"
}
check "demo --load of a model at the epoch bound resumes; past it, refused" epoch_bound

# --recommend_k past the catalogue costs what the catalogue does: a million asked of a model of
# a few hundred items, every user's list written, in an address space of 1 GB
huge_k() {
    (ulimit -v 1000000 && demo --load "$B/books.ncf" --recommend_all "$B/all_k.csv" --recommend_k 1048576 > "$B/huge_k.log") &&
        items=$(grep -o '[0-9]* items' "$B/huge_k.log" | head -n 1 | cut -d' ' -f1) &&
        grep -q "the top $items of each" "$B/huge_k.log"
}
check "demo --recommend_k past the catalogue is the catalogue" huge_k

# every file the demo writes is replaced whole or not at all: with writes failing past a size
# limit (as on a full disk), --export_c, --recommend_all, --log and --plot fail, each saying so,
# and leave the old file as it was, with no temporary file beside it
kept_on_failure() {
    for f in export_c recommend_all log plot; do echo "old $f" > "$B/keep.$f"; done
    # (through a pipe: under the limit the log could not grow either)
    (trap '' XFSZ; ulimit -f 8
        demo --load "$B/books.ncf" --export_c "$B/keep.export_c" || echo "exit $?"
        demo --load "$B/books.ncf" --recommend_all "$B/keep.recommend_all" || echo "exit $?"
        ulimit -f 0
        demo $SYN --train_epochs 1 --log "$B/keep.log" || echo "exit $?"
        demo $SYN --train_epochs 1 --plot "$B/keep.plot" || echo "exit $?") 2>&1 | cat > "$B/kept.log"
    [ "$(grep -c 'writing .* failed' "$B/kept.log")" = 4 ] && [ "$(grep -c '^exit 1$' "$B/kept.log")" = 4 ] &&
    for f in export_c recommend_all log plot; do [ "$(cat "$B/keep.$f")" = "old $f" ] || return 1; done &&
    [ -z "$(ls "$B" | grep '^keep\..*\.tmp-')" ]
}
check "demo outputs replace a file whole or leave it: --export_c, --recommend_all, --log, --plot" kept_on_failure

# an output that is not a regular file is written in place, never replaced: - is standard
# output, /dev/stdout stays a link (as root a rename could replace it), a FIFO stays a FIFO
in_place() {
    demo --load "$B/books.ncf" --recommend_all - > "$B/inplace.csv" 2> /dev/null &&
        [ "$(grep -c '^recommend,2[0-9]*,[0-9]*,' "$B/inplace.csv")" -eq 4000 ] && [ ! -e ./- ] &&
        demo --load "$B/books.ncf" --recommend_all /dev/stdout > "$B/inplace2.csv" 2> /dev/null &&
        [ "$(grep -c "^recommend,2[0-9]*,[0-9]*," "$B/inplace2.csv")" -eq 4000 ] && [ -L /dev/stdout ] &&
        rm -f "$B/inplace.fifo" && mkfifo "$B/inplace.fifo" && { cat "$B/inplace.fifo" > "$B/inplace3.csv" & } &&
        demo --load "$B/books.ncf" --recommend_all "$B/inplace.fifo" > /dev/null 2>&1 && wait &&
        [ -p "$B/inplace.fifo" ] && [ "$(wc -l < "$B/inplace3.csv")" -eq 4001 ]
}
check "demo writes -, /dev/stdout and a FIFO in place, never replacing them" in_place

# flags given what no list of ids is: a device, a folder, NUL bytes, an id too long to be one;
# an empty list; an L2 of inf; --keep_missing without --load; a file named after a keyword
hostile_flags() {
    printf '034545104X\n03\000045\n' > "$B/nul.ids" && long=$(printf '%0300d' 7) && id256=$(printf '%0256d' 7) &&
    for a in "--allow /dev/zero:is a device, not a file of ids" "--deny $B:is a folder, not a file of ids" \
             "--allow $B/nul.ids:nul.ids:2: a NUL byte" "--recommend $long:is longer than 256 bytes" \
             "--recommend_for ,:--recommend_for: no item given" "--similar $long:the id is longer than 256 bytes" \
             "--recommend \"$id256\":unknown user '0000" "--recommend \"${id256}7\":an id longer than 256 bytes"; do
        ! demo --load "$B/books.ncf" --recommend_for 034545104X ${a%%:*} > "$B/hostile.log" 2>&1 &&
            grep -q -e "${a#*:}" "$B/hostile.log" || { echo "${a%%:*}: $(cat "$B/hostile.log")"; return 1; }
    done &&
    ! demo --mlp_regularization 0,inf 2> "$B/hostile.log" && grep -q 'not a list of numbers from 0 to 1e6' "$B/hostile.log" &&
    ! demo --keep_missing 2> "$B/hostile.log" && grep -q 'goes with --load' "$B/hostile.log" &&
    demo --load "$B/books.ncf" --export_c "$B/int.h" > /dev/null && grep -q '^static const unsigned char int_model\[' "$B/int.h" &&
    rm -f "$B/endless.ids" && mkfifo "$B/endless.ids" && { yes 034545104X > "$B/endless.ids" 2> /dev/null & } &&
    ! demo --load "$B/books.ncf" --recommend 276725 --allow "$B/endless.ids" > "$B/hostile.log" 2>&1 &&
    grep -q 'more than a catalogue of 300 items needs' "$B/hostile.log" # (an endless pipe of ids: refused, read no further)
}
check "demo refuses what no list of ids is, and names what is wrong with a flag" hostile_flags

# the filters say what they dropped: an item under --min_item_ratings, a k-core, and a user
# who rated every item (dropped with a line, where it used to stop the load)
filters() {
    printf 'user,item\nA,a\nA,b\nA,c\nA,d\nB,a\nB,b\nB,f\nC,a\nC,c\nC,f\nD,e\nE,a\nE,e\nF,a\nF,b\nF,f\n' > "$B/filters.csv" &&
        demo --data "$B/filters.csv" --min_ratings 2 --min_item_ratings 2 --kcore --eval_negatives 1 --train_epochs 1 \
            > "$B/filters.log" &&
        grep -q -e '--min_item_ratings 2 dropped 2 items (2 positives); 1 users were left with too few positives' "$B/filters.log" &&
        grep -q -e '--kcore: the filters ran 2 rounds' "$B/filters.log" &&
        printf 'user,item\n1,10\n1,20\n1,30\n1,40\n2,10\n2,20\n3,30\n3,10\n4,20\n4,30\n' > "$B/every.csv" &&
        demo --data "$B/every.csv" --eval_negatives 1 --train_epochs 1 > "$B/every.log" &&
        grep -q 'dropped 1 users who rated every item left' "$B/every.log" && grep -q '^Iteration 1:' "$B/every.log"
}
check "demo --min_item_ratings, --kcore and a user of every item: each says what it dropped" filters

# evaluation's memory is bounded by the model and the threads, not the catalogue times the
# widest layer: a 4,096-wide layer over 6,000 items, full ranking on 2 threads, in 300 MB of
# address space (0.6.1 ran out of memory there: 2 x 6,000 x 4,096 floats a thread)
wide_model_memory() {
    (ulimit -v 300000 && demo --synthetic_users 30 --synthetic_items 6000 --synthetic_ratings 1500 --layers 16,4096,8 \
        --train_epochs 0 --no_validation --threads 2 > "$B/wide.log") && grep -q '^    test .*full ranking' "$B/wide.log"
}
check "demo evaluates a wide model over a large catalogue in 300 MB" wide_model_memory

# a ratio split saved with --save_split and read back by --data PREFIX: the same split, so the
# same model and the same figures at every cut-off; --select and --top_k lists
saved_split() {
    demo --data "$B/plays.tsv" --holdout ratio:0.3 --top_k 5,10 --select map@10 --train_epochs 2 \
        --save_split "$B/split" > "$B/split_a.log" &&
        demo --data "$B/split" --top_k 5,10 --select map@10 --train_epochs 2 > "$B/split_b.log" &&
        grep -q '^saved the split: .*split.train.tsv, .validation.tsv and .test.tsv' "$B/split_a.log" &&
        grep -q '^held out: the saved split' "$B/split_b.log" &&
        grep -q '^Chosen on validation MAP@10: epoch' "$B/split_a.log" &&
        a=$(tr -d '\r' < "$B/split_a.log" | sed -n '/^Chosen on/,$p') && b=$(tr -d '\r' < "$B/split_b.log" | sed -n '/^Chosen on/,$p') &&
        [ -n "$a" ] && [ "$a" = "$b" ] &&
        [ "$(cat "$B/split.train.tsv" "$B/split.validation.tsv" "$B/split.test.tsv" | sort | uniq -d | wc -l)" -eq 0 ] &&
        ! demo --data "$B/plays.tsv" --holdout ratio:1.5 > "$B/split_c.log" 2>&1 && grep -q "'1.5' is not a number" "$B/split_c.log" &&
        ! demo --data "$B/plays.tsv" --top_k 5,10 --select ndcg@20 > "$B/split_c.log" 2>&1 &&
        grep -q 'one of --top_k' "$B/split_c.log"
}
check "demo --save_split writes a split that --data reads back to the same figures" saved_split

# --output json and csv: standard output holds the answers alone, and every JSON line parses:
# ids that are not UTF-8 as \udcXX (their bytes back through surrogateescape), scores no float
# holds (an MLP whose layer stack overflows) as null
answers_parse() {
    u=$(printf '\377u5') && i=$(printf 'a\30360') &&
        demo --data "$B/bytes.tsv" --train_epochs 1 --recommend "$u" --similar "$i" --output json > "$B/answers.json" &&
        demo --load "$B/overflow.ncf" --recommend 2 --output json >> "$B/answers.json" &&
        demo --data "$B/bytes.tsv" --train_epochs 1 --recommend "$u" --output csv > "$B/answers.csv" &&
        [ "$(wc -l < "$B/answers.json")" -eq 3 ] && [ "$(wc -l < "$B/answers.csv")" -eq 11 ] &&
        grep -q '"score":null' "$B/answers.json" && ! grep -q 'inf' "$B/answers.json" &&
        python3 - "$B/answers.json" << 'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert lines[0]["query"].encode("utf-8", "surrogateescape") == b"\xffu5", lines[0]["query"]
assert lines[1]["query"].encode("utf-8", "surrogateescape") == b"a\xc360", lines[1]["query"]
assert all(i["score"] is None for i in lines[2]["items"])
EOF
}
check "demo --output json and csv: the answers alone on standard output, every JSON line parsed" answers_parse

# an output of several files is one: a split without validation over one with it leaves no
# validation file behind; the embeddings' four files are all replaced or none (a write failing
# past a size limit, a name too long for its suffix), with no temporary file left
multi_file_outputs() {
    demo --data "$B/plays.tsv" --holdout ratio:0.3 --train_epochs 1 --save_split "$B/multi" > "$B/multi.log" &&
        [ -f "$B/multi.validation.tsv" ] &&
        demo --data "$B/plays.tsv" --holdout ratio:0.3 --no_validation --train_epochs 1 --save_split "$B/multi" \
            > "$B/multi.log" && [ ! -e "$B/multi.validation.tsv" ] &&
        [ "$(cat "$B/multi.train.tsv" "$B/multi.test.tsv" | wc -l)" -eq "$(demo --data "$B/multi" --train_epochs 0 |
            sed -n 's/.*kept \([0-9]*\) positives.*/\1/p')" ] || return 1
    for s in users.npy users.csv items.npy items.csv; do echo "old $s" > "$B/emb_keep.$s"; done
    (trap '' XFSZ; ulimit -f 8
        demo --load "$B/books.ncf" --export_embeddings "$B/emb_keep" || echo "exit $?") > "$B/multi.log" 2>&1
    grep -q 'writing .* failed' "$B/multi.log" && grep -q '^exit 1$' "$B/multi.log" &&
        for s in users.npy users.csv items.npy items.csv; do [ "$(cat "$B/emb_keep.$s")" = "old $s" ] || return 1; done &&
        [ -z "$(ls "$B" | grep '^emb_keep\..*\.tmp-')" ] &&
        long="$B/$(printf '%05000d' 1)" && ! demo --load "$B/books.ncf" --export_embeddings "$long" > "$B/multi.log" 2>&1 &&
        grep -q 'the name is too long' "$B/multi.log" && ! grep -q '^exported' "$B/multi.log"
}
check "demo writes a multi-file output whole or not at all: --save_split, --export_embeddings" multi_file_outputs

# tests/seconds.sh (make bench NCF_DATA=DIR) reads the demo's epochs: at threshold 0 the first
# epoch validation has chosen so far is epoch 0, above 1 none is, and validation's final
# choice is the one the demo prints
seconds_script() {
    tests/seconds.sh syn 0 $DEMO $SYN --train_epochs 3 > "$B/seconds_a.log" &&
        tests/seconds.sh syn 1.01 $DEMO $SYN --train_epochs 3 > "$B/seconds_b.log" &&
        demo $SYN --train_epochs 3 > "$B/seconds.log" &&
        n=$(sed -n 's/^Chosen on validation HR@10: epoch \([0-9]*\) .*/\1/p' "$B/seconds.log") && [ -n "$n" ] &&
        grep -q '"reached_s":[0-9.]*,"reached_epoch":0,' "$B/seconds_a.log" &&
        grep -q '"reached_s":null,' "$B/seconds_b.log" &&
        grep -q "\"chosen_epoch\":$n," "$B/seconds_a.log" && grep -q "\"chosen_epoch\":$n," "$B/seconds_b.log"
}
check "tests/seconds.sh times the demo to the first chosen epoch past a threshold" seconds_script

# every number --help gives as a default is printed from the options the demo starts with
# (%D in a flag's help), none written into a help string by hand
help_defaults() {
    demo --help > "$B/help.log" && ! grep -q '%D' "$B/help.log" &&
        grep -q -- '--num_factors N  *GMF (MF) embedding size (default 8)' "$B/help.log" &&
        grep -q -- '--layers A,B,C,...  *MLP sizes; the first is the user+item embedding (default 64,32,16,8)' "$B/help.log" &&
        grep -q -- "--epsilon X  *Adam's epsilon (default 1e-8)" "$B/help.log" &&
        ! grep -n '{F_[A-Z0-9_]*, "--[a-z_]*",.*(default [0-9]' demo.c
}
check "demo --help prints each default from the options the demo starts with" help_defaults

# a ratings log where -1 means "on my list, not rated": --min_rating drops those lines before
# their strength is read; kept, they are named with the way out. An event log: the kinds are
# counted and said, --events weighs them, filters the kinds it does not list and says so
logs_as_they_come() {
    printf 'user_id,anime_id,rating\n1,10,-1\n1,11,8\n1,12,9\n2,10,9\n2,12,-1\n2,13,6\n3,11,7\n3,13,10\n3,10,5\n' \
        > "$B/anime.csv" &&
        demo --data "$B/anime.csv" --min_rating 1 --weighting log --eval_negatives 1 --train_epochs 1 > "$B/anime.log" &&
        grep -q -e '--min_rating 1 dropped 2 interactions' "$B/anime.log" &&
        demo --data "$B/anime.csv" --eval_negatives 1 --train_epochs 1 > "$B/anime.log" &&
        grep -q "^note: 2 interactions rated 0 or below were kept as positives" "$B/anime.log" &&
        ! demo --data "$B/anime.csv" --weighting log --train_epochs 1 > "$B/anime.log" 2>&1 &&
        grep -q "anime.csv:2: strength '-1' is not a number in \[0, 1e15\] (a rating below 0 often means 'not rated'" \
            "$B/anime.log" &&
        printf 'timestamp,visitorid,event,itemid\n1,v1,view,p1\n2,v1,view,p1\n3,v1,transaction,p1\n4,v1,view,p2\n' \
            > "$B/events.csv" &&
        printf '5,v1,remove,p3\n6,v2,addtocart,p2\n7,v2,view,p3\n8,v2,remove,p4\n9,v3,view,p3\n10,v3,view,p1\n' \
            >> "$B/events.csv" &&
        demo --data "$B/events.csv" --eval_negatives 1 --train_epochs 1 > "$B/events.log" &&
        grep -q '^read as: .*event=event' "$B/events.log" &&
        grep -q '^events (event): view 6 lines, transaction 1 lines, remove 2 lines, addtocart 1 lines; every line a positive' \
            "$B/events.log" &&
        demo --data "$B/events.csv" --events view=1,addtocart=3,transaction=5 --eval_negatives 1 --train_epochs 1 \
            > "$B/events.log" &&
        grep -q '^events (event): view 6 lines (strength 1), addtocart 1 lines (strength 3), transaction 1 lines (strength 5), remove 2 lines (not listed: dropped)$' \
            "$B/events.log" &&
        grep -q '^weights: 1 + 1\*log(1 + strength): from 1.693 to 3.079' "$B/events.log" &&
        ! demo --data "$B/anime.csv" --events view > "$B/events.log" 2>&1 &&
        grep -q 'an events list needs an event column' "$B/events.log"
}
check "demo reads logs as they come: -1 ratings filtered before strengths, event kinds counted, weighed, filtered" logs_as_they_come

# --save writes what serving needs; --save_state adds Adam's moments, and only that file resumes
# as one unbroken run (the other says so); an ALS model has no moments to keep
save_state() {
    demo $SYN --train_epochs 2 --no_validation --save "$B/plain.ncf" > /dev/null &&
        demo $SYN --train_epochs 2 --no_validation --save_state --save "$B/state.ncf" > /dev/null &&
        [ "$(wc -c < "$B/state.ncf")" -gt "$(( 2 * $(wc -c < "$B/plain.ncf") ))" ] &&
        whole=$(demo $SYN --train_epochs 3 --no_validation | grep -o '^Iteration 3: HR = [0-9.]*, NDCG = [0-9.]*') &&
        demo $SYN --load "$B/state.ncf" --train_epochs 3 --no_validation > "$B/state.log" &&
        grep -q "^$whole" "$B/state.log" && ! grep -q 'no Adam moments' "$B/state.log" &&
        demo $SYN --load "$B/plain.ncf" --train_epochs 3 --no_validation > "$B/state.log" &&
        grep -q '^note: .*plain.ncf holds no Adam moments (saved without --save_state)' "$B/state.log" &&
        demo $SYN --model mf --optimizer als --train_epochs 2 --save_state --save "$B/als_state.ncf" > /dev/null &&
        demo $SYN --model mf --optimizer als --train_epochs 2 --save "$B/als_plain.ncf" > /dev/null &&
        cmp -s "$B/als_state.ncf" "$B/als_plain.ncf"
}
check "demo --save writes what serving needs, --save_state what resuming needs; ALS keeps no moments" save_state

# --tune --holdout none: searched and tested on the default split, then the winner's settings
# trained on every interaction and saved (the same settings as the split's model; other weights)
tune_all() {
    demo --data "$B/plays.tsv" --tune 3 --save "$B/tuned_split.ncf" > "$B/tune_split.log" &&
        demo --data "$B/plays.tsv" --tune 3 --holdout none --save "$B/tuned_all.ncf" > "$B/tune_all.log" &&
        kept=$(sed -n 's/^kept \([0-9]*\) positives of.*/\1/p' "$B/tune_all.log") && [ -n "$kept" ] &&
        grep -q "^training the same settings on every interaction (--holdout none): $kept positives" "$B/tune_all.log" &&
        grep -q '^saved .*tuned_all.ncf: the tuned settings trained on every interaction; the test figures above' \
            "$B/tune_all.log" &&
        [ "$(grep -A1 '^Tuned, ' "$B/tune_split.log" | sed -n 2p)" = "$(grep -A1 '^Tuned, ' "$B/tune_all.log" | sed -n 2p)" ] &&
        a=$(demo --load "$B/tuned_split.ncf" --data "$B/plays.tsv" --holdout none --train_epochs 0 | grep '^model: ') &&
        b=$(demo --load "$B/tuned_all.ncf" --data "$B/plays.tsv" --holdout none --train_epochs 0 | grep '^model: ') &&
        [ -n "$a" ] && [ "$a" = "$b" ] && ! cmp -s "$B/tuned_split.ncf" "$B/tuned_all.ncf"
}
check "demo --tune --holdout none: the winner tested on the split, then trained on every interaction and saved" tune_all

# --tune shows each run's epochs as they end: on a terminal (script(1) gives it one) a line
# that redraws, with the epoch, the loss, the validation figure and the time against the plan
tune_progress() {
    script -qc "$DEMO --data $B/plays.tsv --tune 2 --threads 1 > /dev/null" /dev/null > "$B/tty.log" &&
        tr '\r' '\n' < "$B/tty.log" |
        grep -q '^  trial 0, rung 0: epoch 1 of [0-9]*, loss [0-9.]*, validation HR@10 [0-9.]* ([0-9.]* s, planned [0-9.]*; [0-9]* s of 2)'
}
command -v script > /dev/null && check "demo --tune shows each run's epochs on a terminal as a line that redraws" tune_progress

# --similar on a NeuMF (or MLP): items alike in what the model scores, the correlation of their
# logits over up to 256 users evenly spaced by index, computed again here from the Python
# package's predict (the same ids and values); an MF says its cosine as before
similar_by_scores() {
    demo --data "$B/plays.tsv" --holdout none --train_epochs 3 --save "$B/sim.ncf" > /dev/null &&
        demo --load "$B/sim.ncf" --similar 51 --output csv > "$B/sim.csv" &&
        demo --load "$B/sim.ncf" --similar 51 > "$B/sim.log" &&
        grep -q "^The 10 items most like 51 (the correlation of their scores over [0-9]* users: a NeuMF's factors" "$B/sim.log" &&
        for p in python3 /usr/bin/python3; do $p -c 'import numpy' 2> /dev/null && break; done &&
        PYTHONPATH=python $p - "$B/sim.ncf" "$B/sim.csv" << 'EOF'
import csv, sys
import numpy as np
import ncf
m = ncf.Model.load(sys.argv[1])
users, items = m.user_ids, m.item_ids
s = min(256, len(users))
sample = users[[j * len(users) // s for j in range(s)]]
scores = np.stack([m.predict(np.full(len(items), u), items) for u in sample]).astype(np.float64)
c = scores - scores.mean(0)
like = (c.T @ c[:, list(items).index(51)]) / np.sqrt((c * c).sum(0) * (c[:, list(items).index(51)] ** 2).sum())
order = [j for j in np.lexsort((np.arange(len(items)), -like)) if items[j] != 51][:10]
got = [(int(r[3]), float(r[4])) for r in list(csv.reader(open(sys.argv[2])))[1:]]
assert [g[0] for g in got] == [int(items[j]) for j in order], (got, [(items[j], like[j]) for j in order])
assert all(abs(g[1] - like[j]) < 1e-4 for g, j in zip(got, order)), got
EOF
}
check "demo --similar on a NeuMF: items whose scores go together, as computed again from predict" similar_by_scores

# --item_names: names beside the ids in every answer (text, CSV, JSON, --recommend_all, a new
# user's and a similar item's), from a file read as a log is: a header naming its columns in any
# order, quotes, ids as written ("0054" is not 54); the first of a repeated id kept; a line without
# a name refused with file:line. One CSV layout for --output csv and --recommend_all
item_names() {
    printf 'genre,name,anime_id\nAction,"Fist, of the North Star",51\nDrama,Clannad,52\nX,"Third ""Quoted""",53\n' \
        > "$B/names.csv" && printf 'Drama,Not this one,52\nDrama,Nor this,0054\n' >> "$B/names.csv" &&
        demo --data "$B/plays.tsv" --holdout none --model mf --train_epochs 2 --save "$B/named.ncf" > /dev/null &&
        demo --load "$B/named.ncf" --item_names "$B/names.csv" --similar 52 --recommend_k 400 > "$B/names.log" &&
        grep -q '^ *[0-9]*  *51  *[-0-9.]*  Fist, of the North Star$' "$B/names.log" &&
        grep -q '^ *[0-9]*  *53  *[-0-9.]*  Third "Quoted"$' "$B/names.log" &&
        demo --load "$B/named.ncf" --item_names "$B/names.csv" --similar 51 --recommend_k 400 --output csv > "$B/names.csv.out" &&
        head -n 1 "$B/names.csv.out" | grep -q '^kind,query,rank,id,score,name$' &&
        grep -q '^similar,51,[0-9]*,52,[-0-9.e]*,Clannad$' "$B/names.csv.out" &&
        grep -q '^similar,51,[0-9]*,53,[-0-9.e]*,"Third ""Quoted"""$' "$B/names.csv.out" &&
        grep -q '^similar,51,[0-9]*,54,[-0-9.e]*,$' "$B/names.csv.out" &&
        demo --load "$B/named.ncf" --item_names "$B/names.csv" --recommend_for 51 --recommend_k 400 --output json > "$B/names.json" &&
        grep -q '{"id":"52","score":[-0-9.e]*,"name":"Clannad"}' "$B/names.json" &&
        demo --load "$B/named.ncf" --item_names "$B/names.csv" --recommend_all "$B/all_named.csv" --recommend_k 400 > /dev/null &&
        head -n 1 "$B/all_named.csv" | grep -q '^kind,query,rank,id,score,name$' &&
        grep -q '^recommend,[0-9]*,[0-9]*,52,[-0-9.e]*,Clannad$' "$B/all_named.csv" &&
        printf 'id,name\n1,one\n2\n' > "$B/bad_names.csv" &&
        ! demo --load "$B/named.ncf" --item_names "$B/bad_names.csv" --similar 51 > "$B/names.log" 2>&1 &&
        grep -q 'bad_names.csv:3: no name on the line' "$B/names.log"
}
check "demo --item_names: names beside ids in every answer, one CSV layout; a bad names file named by line" item_names

# the habits of command-line tools: --version; a misspelt or another tool's flag gets a "did you
# mean"; --help TOPIC shows one group, an unknown one is named
cli_habits() {
    demo --version | grep -q '^demo of ncf.h [0-9]*\.[0-9]*\.[0-9]* (' &&
        ! demo --trian_epochs 3 2> "$B/cli.log" && grep -q "did you mean --train_epochs?" "$B/cli.log" &&
        ! demo --factors 32 2> "$B/cli.log" && grep -q "did you mean --num_factors?" "$B/cli.log" &&
        ! demo --zzzz 2> "$B/cli.log" && ! grep -q 'did you mean' "$B/cli.log" &&
        demo --help serving > "$B/cli.log" && head -n 1 "$B/cli.log" | grep -q '^serving' &&
        grep -q -e '--similar ITEM' "$B/cli.log" && ! grep -q -e '--train_epochs' "$B/cli.log" &&
        demo --help files | grep -q -e '--save_state' &&
        ! demo --help nonsense 2> "$B/cli.log" && grep -q 'no such group' "$B/cli.log" &&
        [ "$(demo --help | grep -c '^[a-z].*:$')" -ge 7 ]
}
check "demo has --version, says what a misspelt flag meant, and --help TOPIC shows one group" cli_habits

# side features: a brand-new item in the features file only is added from its features, saved,
# and recommended; --item_for features:... scores a new item of the same features as the C
# library scored it (the same logit for the same user); a cold split reports the unseen items
# beside random and popularity by feature; --tune searches with the features there (each run's
# use in its table and --log) and saves a model that serves the new item; a features file's bad
# row is named by line
features() {
    awk 'BEGIN { for (u = 1; u <= 60; u++) for (j = 0; j < 8; j++) printf "u%d,b%d\n", u, (u * 7 + j * j + 3 * j) % 40 }' \
        > "$B/feat_log.csv" &&
        awk 'BEGIN { print "item,genres"; for (i = 0; i < 40; i++) printf "b%d,g%d|h%d\n", i, i % 5, i % 3;
            print "brandnew,g1|h2" }' > "$B/feat_items.csv" &&
        demo --data "$B/feat_log.csv" --item_features "$B/feat_items.csv" --holdout none --train_epochs 2 \
            --save "$B/feat.ncf" > "$B/feat.log" &&
        grep -q '^features: .*feat_items.csv: 41 items with 8 distinct features (41 records); 1 of them not in the log' \
            "$B/feat.log" && grep -q '^added 1 new items from their features alone' "$B/feat.log" &&
        demo --load "$B/feat.ncf" --recommend u5 --recommend_k 41 --output csv > "$B/feat_rec.csv" 2> /dev/null &&
        s=$(tr -d '\r' < "$B/feat_rec.csv" | grep '^user,u5,[0-9]*,brandnew,' | cut -d, -f5) && [ -n "$s" ] &&
        demo --load "$B/feat.ncf" --item_for 'features:g1|h2' --recommend_k 60 --output csv > "$B/feat_for.csv" 2> /dev/null &&
        [ "$(tr -d '\r' < "$B/feat_for.csv" | grep '^item_for,[^,]*,[0-9]*,u5,' | cut -d, -f5)" = "$s" ] &&
        demo --data "$B/feat_log.csv" --item_features "$B/feat_items.csv" --holdout items:0.25 --train_epochs 2 \
            --top_k 10 > "$B/feat_cold.log" &&
        grep -q '^cold items, ranked among the unseen items only:' "$B/feat_cold.log" &&
        grep -q '^    pop. by feature @10 ' "$B/feat_cold.log" && grep -q '^    random  ' "$B/feat_cold.log" &&
        demo --data "$B/feat_log.csv" --item_features "$B/feat_items.csv" --holdout items:0.25 --tune 2 --top_k 10 \
            --save "$B/feat_tuned.ncf" --log "$B/feat_tune.csv" > "$B/feat_tune.log" &&
        grep -q '^ *[0-9]* *0  .* items: features alone x' "$B/feat_tune.log" &&
        grep -q '^ *[0-9]* *0  .* items: id + features x' "$B/feat_tune.log" &&
        grep -q '^cold items, ranked among the unseen items only:' "$B/feat_tune.log" &&
        grep -q '^added 1 new items from their features alone' "$B/feat_tune.log" &&
        head -1 "$B/feat_tune.csv" | grep -q ',unobserved,user_features,item_features,feature_scale$' &&
        ! grep -q ',als,' "$B/feat_tune.csv" && grep -q ',none,alone,' "$B/feat_tune.csv" &&
        demo --load "$B/feat_tuned.ncf" --recommend u5 --recommend_k 41 --output csv 2> /dev/null |
            grep -q '^user,u5,[0-9]*,brandnew,' &&
        printf 'item,genres\nb1,g1\nb2\n' > "$B/feat_bad.csv" &&
        ! demo --data "$B/feat_log.csv" --holdout none --item_features "$B/feat_bad.csv" > "$B/feat_bad.log" 2>&1 &&
        grep -q 'feat_bad.csv:3: 1 fields' "$B/feat_bad.log"
}
check "demo --item_features: a new item served by its features, as --item_for scores it; a cold split; --tune; bad rows" features

# tests/peer_split.c (tests/peers.sh's split for other libraries), on a log whose latest and
# second latest items are known from its times: those held out for test and validation; the
# paper's layout with 99 negatives a user that are none of its positives; the test split's
# training the validation split's with its validation items put back; every line in one place
peer_split() {
    ${CC:-cc} -O1 -Wall -Werror -I. tests/peer_split.c -o "$B/peer_split" -lm &&
        awk 'BEGIN { for (u = 1; u <= 40; u++) for (j = 0; j < 8; j++)
            printf "%d::%d::5::%d\n", u, 1 + (u * 7 + j * 13) % 150, 1000 + (j * 5 + u) % 8 }' > "$B/ps.dat" &&
        "$B/peer_split" "$B/ps.dat" "$B/ps" > "$B/ps.log" && S="$B/ps" &&
        [ "$(cat "$S.train.rating" "$S.test.rating" | wc -l)" = 320 ] &&
        cut -d: -f3 "$B/ps.dat" | sort -n -u | awk '{ print $1, NR - 1 }' > "$B/ps.ids" &&
        awk 'FILENAME ~ /ids$/ { at[$1] = $2; next }
            { split($0, f, "::"); u = f[1] - 1; i = at[f[2]]
              if (!(u in t1) || f[4] > t1[u]) { t2[u] = t1[u]; v[u] = l[u]; t1[u] = f[4]; l[u] = i }
              else if (!(u in t2) || f[4] > t2[u]) { t2[u] = f[4]; v[u] = i } }
            END { for (u in l) { print u "\t" l[u] "\t1\t0" > "'"$B"'/ps.test"; print u "\t" v[u] "\t1\t0" > "'"$B"'/ps.val" } }' \
            "$B/ps.ids" "$B/ps.dat" &&
        sort "$B/ps.test" > "$B/ps.t" && sort "$S.test.rating" | cmp -s "$B/ps.t" - &&
        sort "$B/ps.val" > "$B/ps.v" && sort "$S.val.test.rating" | cmp -s "$B/ps.v" - &&
        cat "$S.val.train.rating" "$S.val.test.rating" | sort > "$B/ps.a" && sort "$S.train.rating" | cmp -s "$B/ps.a" - &&
        awk -F'\t' 'FILENAME ~ /negative$/ { split($1, p, /[(,)]/); if (NF != 100) bad = 1
                                           for (j = 2; j <= NF; j++) if ((p[2] SUBSEP $j) in pos || seen[FILENAME, p[2], $j]++ || $j >= 150) bad = 1
                                           n++; next }
            { pos[$1, $2] = 1 } END { exit bad || n != 80 }' "$S.train.rating" "$S.test.rating" \
            "$S.test.negative" "$S.val.test.negative"
}
check "tests/peer_split.c: test and validation the latest two, 99 negatives, validation put back" peer_split
