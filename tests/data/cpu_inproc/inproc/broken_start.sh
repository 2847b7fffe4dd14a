compute() { echo $(($1 + $2)); }
cost() { echo 2.0; }
