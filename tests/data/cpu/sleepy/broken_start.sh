compute() { echo $(($1 + $2)); }
cost() { echo 1.0; }
