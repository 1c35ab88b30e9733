"""Issue 25 item 15: the secret filter and the deny list close what a parser can see. Still a
guardrail, not a sandbox: the corpora below are what it is tested against."""

from __future__ import annotations

import pytest

from phi.tools.deny import DEFAULT_DENY_PATTERNS, find_denied
from phi.tools.env_filter import filter_environment, is_secret_variable

SECRETS = [
    "KUBECONFIG", "NETRC", "STRIPE_SK", "STRIPE_SK_LIVE", "STRIPE_RK_LIVE", "PGPASSFILE", "SSLKEYLOGFILE",
    "BOTO_CONFIG", "DOCKER_CONFIG", "GIT_CREDENTIALS", "REGISTRY_AUTH_FILE", "GOOGLE_KEYFILE_JSON", "SSHKEY",
    "DEPLOY_PRIVATEKEY", "MINIO_ACCESSKEY", "MINIO_SECRETKEY", "CI_JOB_JWT", "HTTP_AUTHORIZATION", "BEARER",
    "SESSION_COOKIE", "HMAC_SALT", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AWS_SHARED_CREDENTIALS_FILE", "GH_TOKEN", "GITHUB_PAT", "NPM_TOKEN", "CARGO_REGISTRY_TOKEN",
    "TF_TOKEN_app_terraform_io", "VAULT_TOKEN", "SLACK_SIGNING_SECRET", "SENTRY_DSN", "TWILIO_AUTH_TOKEN",
    "MYSQL_PWD", "PGPASSWORD", "DATABASE_URL", "AZURE_STORAGE_CONNECTION_STRING", "GPG_PASSPHRASE",
    "LICENSE_KEY", "SIGNING_KEYS", "DB_PASS", "CODECOV_TOKEN", "OP_SERVICE_ACCOUNT_TOKEN",
]
TOKEN_VALUES = [
    "sk_live_51Habcdefghijklmnop", "rk_live_51Habcdefghijklmnop", "sk-proj-abcdefghijklmnopqrstuvwx",
    "sk-ant-api03-abcdefghijklmnopqrstuv", "ghp_" + "a" * 36, "github_pat_" + "b" * 40, "glpat-" + "c" * 20,
    "xoxb-1234-5678-abcdefgh", "AKIAIOSFODNN7EXAMPLE", "AIza" + "d" * 35, "hf_" + "e" * 34,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
]
PLAIN = [
    "PATH", "HOME", "KEYBOARD_LAYOUT", "TOKENIZERS_PARALLELISM", "GIT_AUTHOR_NAME", "AUTHOR", "TASK_ID",
    "DISK_SIZE", "SKIP_TESTS", "DESKTOP_SESSION", "PASSENGER_APP_ENV", "SECRETARY_NAME", "KUBE_NAMESPACE",
    "NETWORK_MODE", "SSH_AUTH_SOCK", "PWD", "OLDPWD", "LANG", "TERM", "CI", "OTP_VERSION", "AWS_REGION",
    "AWS_PROFILE", "NODE_ENV", "PYTHONHASHSEED", "MONKEYPATCH_ALL", "KEYCHAIN_PROFILE", "COOKIECUTTER_CONFIG_DIR",
]


def test_secret_names_are_removed():
    assert len(SECRETS) >= 40 and len(set(SECRETS)) == len(SECRETS)
    assert [n for n in SECRETS if not is_secret_variable(n, "x")] == []


@pytest.mark.parametrize("value", TOKEN_VALUES)
def test_token_shaped_values_are_removed_whatever_the_name(value):
    assert filter_environment({"MY_SETTING": value}) == {}


def test_benign_look_alikes_are_kept():
    source = {name: "plain value" for name in PLAIN}
    assert filter_environment(source) == source
    assert filter_environment({"BUILD_ID": "sk-short", "GREETING": "ghp is a word"}) == {"BUILD_ID": "sk-short",
                                                                                         "GREETING": "ghp is a word"}


DESTRUCTIVE = [
    # rm, every spelling the parser can see
    "rm -rf /", "rm -fr /", "rm -r -f /", "rm --recursive --force /", "rm -rf /*", "rm -rf //", "rm -rf /.",
    "rm -rf /tmp/..", "rm -rf ~", "rm -rf ~/", "rm -rf $HOME", "rm -rf \"${HOME}\"", "rm -rf ~/*", "rm -rf /etc",
    "rm -rf /usr", "rm -rf /home", "rm -rf /{bin,etc}", "rm -rf -- /", "\\rm -rf /", "'rm' -rf /", "/bin/rm -rf /",
    "sudo rm -rf --no-preserve-root /", "rm --no-preserve-root -rf /tmp", "nice -n 19 rm -rf /",
    "env -i rm -rf /", "busybox rm -rf /", "pkexec rm -rf /", "timeout 5 rm -rf /", "nohup rm -rf / &",
    # computed at run time, where the parser can still see it
    "$(echo rm) -rf /", "`echo rm` -rf /", "CMD=reboot; $CMD", "X=/; rm -rf $X", "export T=/; rm -rf ${T}",
    "$(which rm) -rf /", "eval \"$(echo reboot)\"", "eval rm -rf /", "cd / && rm -rf *", "cd; rm -rf *",
    # nested shells, pipes and interpreters
    "bash -c 'rm -rf ~'", "sh -lc \"reboot\"", "su -c 'rm -rf /'", "echo $(reboot)", "echo 'rm -rf /' | bash",
    "printf 'reboot' | sh", "echo cm0gLXJmIC8= | base64 -d | sh", "echo / | xargs rm -rf",
    "python3 -c \"import os; os.system('rm -rf /')\"", "python -c 'import shutil; shutil.rmtree(\"/\")'",
    "perl -e 'system(\"reboot\")'", "ruby -e '`rm -rf ~`'", "node -e \"require('child_process').execSync('reboot')\"",
    # find
    "find / -delete", "find /* -delete", "find ~ -delete", "find $HOME -name '*' -delete", "find / -exec rm -rf {} +",
    "find ~ -execdir rm -rf {} \\;",
    # disks and devices
    "mkfs.ext4 /dev/sda1", "mke2fs /dev/sdb", "wipefs -a /dev/sda", "dd if=/dev/zero of=/dev/sda",
    "dd if=/dev/urandom of=/dev/nvme0n1 bs=1M", "dd of=/dev/vda if=/dev/zero", "cat /dev/zero > /dev/sda",
    "echo x > /dev/mmcblk0", "shred /dev/sda", "mkswap /dev/sdb1", "blkdiscard /dev/nvme0n1",
    "sgdisk --zap-all /dev/sda", "parted /dev/sda mklabel gpt", "cat x | tee /dev/sda", "echo 1 > /dev/mem",
    # system files, permissions, ownership
    "echo root::0:0::/:/bin/sh > /etc/passwd", "cat /dev/null > /etc/shadow", "chmod -R 777 /", "chmod -R 000 /etc",
    "chown -R nobody /", "chgrp -R users /usr", "mv ~ /dev/null",
    # power, processes, scheduling
    "shutdown -h now", "reboot", "poweroff", "halt", "init 0", "telinit 6", "systemctl reboot", "systemctl kexec",
    "kill -9 -1", "kill -KILL -1", "kill -s KILL -1", "kill -- -1", "kill -9 1", "killall5 -9", "crontab -r",
    ":(){ :|:& };:", "bomb(){ bomb|bomb& };bomb",
    # remote history
    "git push -f", "git push --force origin main", "git push origin +main", "git push --force-with-lease",
    "git push --mirror", "git push origin --delete main", "git push origin :main",
]
BENIGN = [
    "rm -rf /tmp/build", "rm -rf build", "rm -rf ./dist node_modules", "rm -rf \"$TMPDIR/x\"", "cd build && rm -rf *",
    "cd /tmp && rm -rf build", "find . -name '*.pyc' -delete", "find /tmp/x -delete", "find / -name foo",
    "find . -exec grep -l foo {} +", "echo reboot", "man shutdown", "grep -rn halt src/", "git commit -m 'rm -rf /'",
    "kill -9 12345", "kill -1", "kill %1", "git push origin main", "git push", "git push origin --delete-not",
    "chmod -R 755 ./dist", "chmod 644 /tmp/x", "$EDITOR notes.txt", "$PYTHON -m pytest -q", "X=1; echo $X",
    "python3 -c 'print(\"rm -rf\")'", "python3 -c 'import os; print(os.getcwd())'", "echo hi | xargs echo",
    "ls /", "cat /etc/passwd", "dd if=/dev/zero of=/tmp/img bs=1M count=1", "dd if=x of=/dev/null",
    "mv a.txt /tmp/b.txt", "mv a.txt ~", "crontab -l", "echo \"$(date)\"", "shred -u secret.txt", "tee out.log",
    "cat <<EOF\nreboot\nEOF", "systemctl status nginx", "docker rm -f web", "git clean -n",
]


def test_the_destructive_corpus_is_refused():
    assert len(DESTRUCTIVE) >= 84 and len(set(DESTRUCTIVE)) == len(DESTRUCTIVE)
    assert [c for c in DESTRUCTIVE if find_denied(c, DEFAULT_DENY_PATTERNS) is None] == []


def test_benign_look_alikes_run():
    assert [(c, find_denied(c, DEFAULT_DENY_PATTERNS)) for c in BENIGN
            if find_denied(c, DEFAULT_DENY_PATTERNS) is not None] == []
