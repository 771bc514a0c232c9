#!/usr/bin/perl
# run.pl: the test runner behind tests/run, on perl's TAP::Harness (the library of `prove`).
# Runs the files given (or every test file), each through tests/lib/tap-exec (time limit, log in
# build/test-logs/), TEST_JOBS at a time (default 1); TAP::Harness prints each file's verdict,
# its failed and skipped tests, and the summary report. Then, for each failed file, the last
# lines of its log; then the list of failed files and the plain line "N passed, N failed, N
# skipped" (a file skipped whole counts one skip; a file with a bad exit status, a wrong plan or
# no TAP counts one failure more when none of its tests failed). Exit 1 when anything failed.
use strict;
use warnings;
use TAP::Harness;

my @files = @ARGV;
if (!@files) {
	for my $glob ('build/tests/*.t', 'tests/unit/*.t', 'tests/sandbox/*.t',
		      'tests/integration/*.t', 'tests/browser/*.t') {
		push @files, grep { -f $_ && -x $_ } glob $glob;
	}
}
my $harness = TAP::Harness->new({
	exec => ['tests/lib/tap-exec'],
	jobs => $ENV{TEST_JOBS} || 1,
	timer => 1,
	failures => 1,
	verbosity => 0,
	color => 0,
});
my $agg = $harness->runtests(@files);

my ($pass, $fail, $skip, @failed) = (0, 0, 0);
for my $f (@files) {
	my ($p) = $agg->parsers($f);
	next unless $p;
	if ($p->skip_all) {
		$skip++;
		next;
	}
	my $todo_failed = scalar($p->todo) - scalar($p->todo_passed);
	$pass += scalar($p->passed) - scalar($p->skipped) - $todo_failed;
	$skip += scalar($p->skipped);
	my $n = scalar($p->failed);
	$n++ if $n == 0 && ($p->has_problems || !$p->tests_run);
	next unless $n;
	$fail += $n;
	push @failed, $f;
	(my $name = $f) =~ tr{/}{_};
	my $log = "$ENV{TEST_LOGS}/$name.log";
	print "--- $f: last lines of $log:\n";
	if (open my $fh, '<', $log) {
		my @lines = <$fh>;
		print map { "  | $_" } @lines[($#lines > 29 ? $#lines - 29 : 0) .. $#lines];
	}
}
print "failed: @failed\n" if @failed;
print "$pass passed, $fail failed, $skip skipped\n";
exit($fail ? 1 : 0);
